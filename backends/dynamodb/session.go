package dynamodb

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/internal/record"
)

// CreateSession puts the session item, version 1, where none is: one
// PutItem. The session lives TTL from the start of the call, for this
// client; for others, TTL from when they first see its version.
func (d *driver) CreateSession(ctx context.Context, s record.Session) (uint64, error) {
	pk := sessionPrefix + s.ID
	start := time.Now()
	_, err := d.c.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(d.table),
		Item: item{attrPK: str(pk), attrSK: str(single), attrVer: num(1), attrCand: str(s.Candidate),
			attrTTL: num(ms(s.TTL)), attrGC: gcAt(s.TTL)},
		ConditionExpression: aws.String("attribute_not_exists(pk)"),
	})
	if err != nil {
		if ok, rerr := d.landed(ctx, pk, 1, err); !ok {
			return 0, d.failed("open", rerr)
		}
	}
	d.mu.Lock()
	d.own[s.ID] = &ownSession{ver: 1, ttl: s.TTL, deadline: start.Add(s.TTL)}
	d.mu.Unlock()
	d.seen.wrote(pk, 1, start)
	return 1, nil
}

// landed decides, after write error err, whether the write of version
// ver to pk was applied all the same: a retry by the client that failed
// its condition because its first attempt was applied, or an answer lost
// (a timeout, a server fault). It reads the item back (unless the failed
// condition returned it) and reports true if the item holds ver;
// otherwise it returns the error to report: ErrConflict for a failed
// condition or another version, err if the write may still land (the
// core reads the record again before it writes, and adopts a record of
// its own).
func (d *driver) landed(ctx context.Context, pk string, ver uint64, err error) (bool, error) {
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) && len(ccf.Item) > 0 {
		if nOf(ccf.Item, attrVer) == ver {
			return true, nil
		}
		return false, record.ErrConflict
	}
	if !conflicted(err) && !ambiguous(err) || ctx.Err() != nil {
		return false, err
	}
	it, gerr := d.get(ctx, pk, single)
	switch {
	case gerr != nil:
		return false, err
	case it != nil && nOf(it, attrVer) == ver:
		return true, nil
	case conflicted(err), it != nil:
		return false, record.ErrConflict
	}
	return false, err
}

// Renew writes the session item's next version, conditioned on the last
// (an UpdateItem), and reads the held locks' items (BatchGetItem), sent
// together: one round trip. A session past its deadline on this client's
// clock is not renewed: it is deleted (best effort) and reported dead.
func (d *driver) Renew(ctx context.Context, s record.Session, held []record.Lock) (record.Renewal, error) {
	o, ok := d.mine(s.ID)
	start := time.Now()
	if !ok || !start.Before(o.deadline) {
		if ok {
			_ = d.kill(ctx, s.ID, o.ver)
		}
		return record.Renewal{Now: start}, nil
	}
	var (
		got  map[string]item
		gerr error
		wg   sync.WaitGroup
	)
	if len(held) > 0 {
		pks := make([]string, len(held))
		for i, l := range held {
			pks[i] = lockPrefix + l.Name
		}
		wg.Go(func() { got, gerr = d.getMany(ctx, pks) })
	}
	ver, alive, err := d.renew(ctx, s.ID, o.ver, o.ttl)
	wg.Wait()
	if err = errors.Join(err, gerr); err != nil {
		return record.Renewal{}, d.failed("keep-alive", err)
	}
	now := time.Now()
	if !alive {
		return record.Renewal{Now: now}, nil
	}
	d.mu.Lock()
	if o := d.own[s.ID]; o != nil {
		o.ver, o.deadline = ver, start.Add(o.ttl)
	}
	d.mu.Unlock()
	d.seen.wrote(sessionPrefix+s.ID, ver, start)
	r := record.Renewal{Alive: true, Version: ver, Now: now}
	for _, h := range held {
		if it := got[lockPrefix+h.Name]; it != nil && sOf(it, attrSess) == s.ID {
			r.Locks = append(r.Locks, d.lockOf(h.Name, it, now))
		}
	}
	return r, nil
}

// renew writes version last+1 of session sid's item on version last. A
// write that fails its condition, or whose answer is lost, reads the
// item: gone, the session is dead; there at another version, that
// version is one of this session's own writes (nobody else writes a
// session item, others only delete it), whose answer was lost, so it
// writes again on it. It never adopts a version it found: an earlier
// call's write that landed late may be what it finds, and the caller
// counts the session's new life from the start of this call, so the
// version that life rests on must be one this call's own request wrote.
func (d *driver) renew(ctx context.Context, sid string, last uint64, ttl time.Duration) (uint64, bool, error) {
	pk := sessionPrefix + sid
	for range 3 {
		_, err := d.c.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                           aws.String(d.table),
			Key:                                 key(pk, single),
			UpdateExpression:                    aws.String("SET #v = :new, #gc = :gc"),
			ConditionExpression:                 aws.String("#v = :old"),
			ExpressionAttributeNames:            map[string]string{"#v": attrVer, "#gc": attrGC},
			ExpressionAttributeValues:           item{":new": num(last + 1), ":old": num(last), ":gc": gcAt(ttl)},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		if err == nil {
			return last + 1, true, nil
		}
		var ccf *types.ConditionalCheckFailedException
		var it item
		switch {
		case errors.As(err, &ccf) && len(ccf.Item) > 0:
			it = ccf.Item
		case conflicted(err) || ambiguous(err) && ctx.Err() == nil:
			var gerr error
			if it, gerr = d.get(ctx, pk, single); gerr != nil {
				return 0, false, err
			}
			if it == nil {
				return 0, false, nil
			}
		default:
			return 0, false, err
		}
		switch v := nOf(it, attrVer); {
		case v == last && !conflicted(err):
			return 0, false, err // not applied (yet): the next renewal finds out
		default:
			last = v // a write of this session's whose answer was lost
		}
	}
	return 0, false, fmt.Errorf("dynamodb: session item %s: three renewals in a row failed or found a version of their own", sid)
}

// kill deletes session sid's item if it still holds version ver: the end
// of a session judged expired, so that its owner's next renewal fails
// (it is conditioned on the version) before anyone takes its locks.
func (d *driver) kill(ctx context.Context, sid string, ver uint64) error {
	_, err := d.c.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(d.table),
		Key:                       key(sessionPrefix+sid, single),
		ConditionExpression:       aws.String("#v = :v"),
		ExpressionAttributeNames:  map[string]string{"#v": attrVer},
		ExpressionAttributeValues: item{":v": num(ver)},
	})
	return err
}

// DeleteSession deletes the held locks' items, each at the version its
// take wrote, the session's registry entries and its item, all at once.
func (d *driver) DeleteSession(ctx context.Context, s record.Session, held []record.Lock) ([]string, error) {
	o, _ := d.mine(s.ID)
	d.mu.Lock()
	delete(d.own, s.ID)
	d.mu.Unlock()
	errs := make([]error, len(held))
	var wg sync.WaitGroup
	for i, l := range held {
		wg.Go(func() {
			_, errs[i] = d.c.DeleteItem(ctx, &dynamodb.DeleteItemInput{
				TableName:                 aws.String(d.table),
				Key:                       key(lockPrefix+l.Name, single),
				ConditionExpression:       aws.String("#v = :v AND #s = :s"),
				ExpressionAttributeNames:  map[string]string{"#v": attrVer, "#s": attrSess},
				ExpressionAttributeValues: item{":v": num(l.Version), ":s": str(s.ID)},
			})
		})
	}
	for g := range o.groups {
		wg.Go(func() { _ = d.Deregister(ctx, g, s.ID) })
	}
	out, err := d.c.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(d.table), Key: key(sessionPrefix+s.ID, single), ReturnValues: types.ReturnValueAllOld,
	})
	wg.Wait()
	var freed []string
	for i, e := range errs {
		switch {
		case e == nil:
			freed = append(freed, held[i].Name)
		case !conflicted(e):
			err = errors.Join(err, e)
		}
	}
	if err != nil {
		return freed, d.failed("close", err)
	}
	if len(out.Attributes) == 0 {
		return freed, fmt.Errorf("dynamodb: session %s: %w", s.ID, backends.ErrSessionLost)
	}
	return freed, nil
}
