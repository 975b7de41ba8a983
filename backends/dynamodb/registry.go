package dynamodb

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hustings/hustings/strategy"
)

// Register stores session sid's entry in group, an item of partition
// group#<group> and sort key sid, if the session lives on this driver's
// clock and its item is there. The order is a counter value taken for
// the call, kept by if_not_exists from the first registration on: three
// requests (the session's item and the counter at once, then the entry).
func (d *driver) Register(ctx context.Context, group, sid string, c strategy.Candidate) (uint64, bool, error) {
	var (
		sit        item
		n          uint64
		serr, nerr error
		wg         sync.WaitGroup
	)
	wg.Go(func() { sit, serr = d.get(ctx, sessionPrefix+sid, single) })
	n, nerr = d.next(ctx)
	wg.Wait()
	if err := firstErr(serr, nerr); err != nil {
		return 0, false, d.failed("register", err)
	}
	o, mine := d.mine(sid)
	if sit == nil || !mine || !time.Now().Before(o.deadline) {
		return 0, false, nil
	}
	meta := make(item, len(c.Meta))
	for k, v := range c.Meta {
		meta[k] = str(v)
	}
	out, err := d.c.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:        aws.String(d.table),
		Key:              key(groupPrefix+group, sid),
		UpdateExpression: aws.String("SET #o = if_not_exists(#o, :o), #c = :c, #s = :s, #w = :w, #m = :m"),
		ExpressionAttributeNames: map[string]string{"#o": attrOrd, "#c": attrCand, "#s": attrScore,
			"#w": attrWeight, "#m": attrMeta},
		ExpressionAttributeValues: item{":o": num(n), ":c": str(sOf(sit, attrCand)), ":s": float(c.Score),
			":w": float(c.Weight), ":m": &types.AttributeValueMemberM{Value: meta}},
		ReturnValues: types.ReturnValueAllNew,
	})
	if err != nil {
		return 0, false, d.failed("register", err)
	}
	d.mu.Lock()
	if o := d.own[sid]; o != nil {
		if o.groups == nil {
			o.groups = map[string]bool{}
		}
		o.groups[group] = true
	}
	d.mu.Unlock()
	return nOf(out.Attributes, attrOrd), true, nil
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Deregister deletes session sid's entry from group: one DeleteItem.
func (d *driver) Deregister(ctx context.Context, group, sid string) error {
	_, err := d.c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(d.table), Key: key(groupPrefix+group, sid)})
	if err == nil {
		d.mu.Lock()
		if o := d.own[sid]; o != nil {
			delete(o.groups, group)
		}
		d.mu.Unlock()
	}
	return d.failed("deregister", err)
}

// Members queries group's entries, reads their sessions' items (one
// BatchGetItem per 100) and lists the entries of the sessions that live,
// judged as ReadLock judges a holder; the entries of sessions found gone
// are deleted.
func (d *driver) Members(ctx context.Context, group string) ([]strategy.Candidate, error) {
	var entries []item
	p := dynamodb.NewQueryPaginator(d.c, &dynamodb.QueryInput{
		TableName:                 aws.String(d.table),
		KeyConditionExpression:    aws.String("pk = :g"),
		ExpressionAttributeValues: item{":g": str(groupPrefix + group)},
		ConsistentRead:            aws.Bool(true),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, d.failed("members", err)
		}
		entries = append(entries, page.Items...)
	}
	pks := make([]string, len(entries))
	for i, e := range entries {
		pks[i] = sessionPrefix + sOf(e, attrSK)
	}
	sessions, err := d.getMany(ctx, pks)
	if err != nil {
		return nil, d.failed("members", err)
	}
	at := time.Now()
	var out []strategy.Candidate
	for i, e := range entries {
		sid := sOf(e, attrSK)
		alive, _, err := d.judge(ctx, sid, sessions[pks[i]], at)
		if err != nil {
			return nil, d.failed("members", err)
		}
		if !alive {
			_, _ = d.c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(d.table), Key: key(groupPrefix+group, sid)})
			continue
		}
		c := strategy.Candidate{ID: sOf(e, attrCand), Order: nOf(e, attrOrd), Score: fOf(e, attrScore), Weight: fOf(e, attrWeight)}
		if m, ok := e[attrMeta].(*types.AttributeValueMemberM); ok && len(m.Value) > 0 {
			c.Meta = make(map[string]string, len(m.Value))
			for k := range m.Value {
				c.Meta[k] = sOf(m.Value, k)
			}
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b strategy.Candidate) int { return cmp.Compare(a.Order, b.Order) })
	return out, nil
}
