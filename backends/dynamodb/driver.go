package dynamodb

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hustings/hustings/backends/internal/record"
	"github.com/hustings/hustings/events"
)

// driver is the record.Driver of the backend: items of one table,
// written by requests conditioned on their record version, with leases
// judged on this client's monotonic clock (see the package doc).
type driver struct {
	c     *dynamodb.Client
	table string
	seen  seen

	mu      sync.Mutex
	own     map[string]*ownSession // the sessions this driver opened, by ID
	holders map[string]string      // lock name → the session its last read named
}

var (
	_ record.Driver = (*driver)(nil)
)

// ownSession is what the driver knows of a session it opened.
type ownSession struct {
	ver      uint64          // the session item's version as last written
	ttl      time.Duration   // its TTL
	deadline time.Time       // the start of its last renewal (or creation) plus TTL
	groups   map[string]bool // groups it registered in
}

func newDriver(c *dynamodb.Client, table string) *driver {
	return &driver{c: c, table: table, own: map[string]*ownSession{}, holders: map[string]string{}}
}

// mine returns a copy of session sid's state if this driver opened it.
func (d *driver) mine(sid string) (ownSession, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	o, ok := d.own[sid]
	if !ok {
		return ownSession{}, false
	}
	return *o, true
}

// ReadLock reads the lock's item beside the reading session's (one
// BatchGetItem), then, for a lock another session holds, that session's
// item. A holder whose version this client has seen unchanged for its
// TTL is deleted at that version before it is reported dead.
func (d *driver) ReadLock(ctx context.Context, name, self string) (record.View, error) {
	lpk := lockPrefix + name
	pks := []string{lpk}
	if self != "" {
		pks = append(pks, sessionPrefix+self)
	}
	guess := d.holder(name, "")
	if guess != "" && guess != self {
		pks = append(pks, sessionPrefix+guess)
	}
	got, err := d.getMany(ctx, pks)
	if err != nil {
		return record.View{}, d.failed("read", err)
	}
	lit, sit := got[lpk], got[sessionPrefix+self]
	at := time.Now()
	var v record.View
	if self != "" {
		v.SelfAlive, _, err = d.judge(ctx, self, sit, at)
		if err != nil {
			return record.View{}, d.failed("read", err)
		}
	}
	if lit != nil {
		v.Lock = d.lockOf(name, lit, at)
		d.holder(name, v.Lock.Session)
		switch sid := v.Lock.Session; {
		case v.Lock.Hold:
		case sid == self:
			v.HolderAlive = v.SelfAlive
			if o, ok := d.mine(self); ok && v.SelfAlive {
				v.HolderExpires = o.deadline
			}
		default:
			hit, hat := got[sessionPrefix+sid], at
			if sid != guess { // the lock changed hands since last read
				hit, err = d.get(ctx, sessionPrefix+sid, single)
				hat = time.Now()
			}
			if err == nil {
				v.HolderAlive, v.HolderExpires, err = d.judge(ctx, sid, hit, hat)
			}
			if err != nil {
				return record.View{}, d.failed("read", err)
			}
		}
	}
	v.Now = time.Now()
	return v, nil
}

// holder returns the session that lock name last named in a read, and
// records sid as it unless sid is empty: ReadLock reads that session's
// item beside the lock's, which saves a round trip while the holder
// stays.
func (d *driver) holder(name, sid string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	last := d.holders[name]
	if sid != "" && sid != last {
		if len(d.holders) >= maxHolders {
			clear(d.holders)
		}
		d.holders[name] = sid
	}
	return last
}

// maxHolders bounds the holders a driver remembers.
const maxHolders = 1 << 14

// judge reports whether session sid, whose item it (nil: none) a read
// answered at at, lives, and until when unless renewed. A session of
// this driver's lives until its own deadline; another's until its TTL
// after this client first saw its version. A session judged expired is
// deleted at the version seen (kill) before it is reported dead; if the
// delete finds another version, the session was renewed: it lives, and
// the wait starts again from the new version.
func (d *driver) judge(ctx context.Context, sid string, it item, at time.Time) (bool, time.Time, error) {
	pk := sessionPrefix + sid
	for range 3 {
		if it == nil {
			return false, time.Time{}, nil
		}
		ver := nOf(it, attrVer)
		var expires time.Time
		if o, ok := d.mine(sid); ok {
			expires = o.deadline
		} else {
			expires = d.seen.observe(pk, ver, at).Add(time.Duration(nOf(it, attrTTL)) * time.Millisecond)
		}
		if at.Before(expires) {
			return true, expires, nil
		}
		err := d.kill(ctx, sid, ver)
		switch {
		case err == nil:
			return false, time.Time{}, nil
		case !conflicted(err):
			return false, time.Time{}, err
		}
		if it, err = d.get(ctx, pk, single); err != nil {
			return false, time.Time{}, err
		}
		at = time.Now()
	}
	return false, time.Time{}, fmt.Errorf("dynamodb: session item %s keeps changing", sid)
}

// lockOf decodes lock name's item, read at at. A lease or hold ends its
// TTL after this client first saw the item's version (or sent its own
// write of it).
func (d *driver) lockOf(name string, it item, at time.Time) record.Lock {
	l := record.Lock{Name: name, Session: sOf(it, attrSess), Candidate: sOf(it, attrCand),
		Token: events.Token(nOf(it, attrTok)), Hold: bOf(it, attrHold), Version: nOf(it, attrVer)}
	if ttl := nOf(it, attrTTL); ttl > 0 {
		l.Expires = d.seen.observe(lockPrefix+name, l.Version, at).Add(time.Duration(ttl) * time.Millisecond)
	}
	return l
}

// CreateLock puts the lock's item where none is.
func (d *driver) CreateLock(ctx context.Context, l record.Lock) (record.Lock, error) {
	return d.write(ctx, l, "attribute_not_exists(pk)", nil)
}

// SwapLock puts the lock's item over the one at version.
func (d *driver) SwapLock(ctx context.Context, l record.Lock, version uint64) (record.Lock, error) {
	return d.write(ctx, l, "#v = :old", item{":old": num(version)})
}

// write takes the counter's next value, the new item's version (and its
// token, for a take), then puts the item under cond: two round trips. A
// write whose answer was lost, or whose retry by the client failed its
// condition, is read back and adopted if it was applied.
func (d *driver) write(ctx context.Context, l record.Lock, cond string, vals item) (record.Lock, error) {
	n, err := d.next(ctx)
	if err != nil {
		return record.Lock{}, d.failed("write", err)
	}
	if l.Token == 0 {
		l.Token = events.Token(n)
	}
	pk := lockPrefix + l.Name
	it := item{attrPK: str(pk), attrSK: str(single), attrVer: num(n), attrSess: str(l.Session),
		attrCand: str(l.Candidate), attrTok: num(uint64(l.Token)), attrHold: &types.AttributeValueMemberBOOL{Value: l.Hold}}
	if l.TTL > 0 {
		it[attrTTL] = num(ms(l.TTL))
	}
	in := &dynamodb.PutItemInput{
		TableName: aws.String(d.table), Item: it, ConditionExpression: aws.String(cond),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	if vals != nil {
		in.ExpressionAttributeNames = map[string]string{"#v": attrVer}
		in.ExpressionAttributeValues = vals
	}
	start := time.Now()
	if _, err := d.c.PutItem(ctx, in); err != nil {
		if ok, rerr := d.landed(ctx, pk, n, err); !ok {
			return record.Lock{}, d.failed("write", rerr)
		}
	}
	d.seen.wrote(pk, n, start)
	l.Version, l.Expires = n, time.Time{}
	if l.TTL > 0 {
		l.Expires = start.Add(l.TTL)
	}
	l.TTL = 0
	return l, nil
}

// DeleteLock deletes the lock's item at version. A failed condition or
// a lost answer reads the item: gone, it is deleted (by this request or
// another at the same version).
func (d *driver) DeleteLock(ctx context.Context, name string, version uint64) error {
	pk := lockPrefix + name
	_, err := d.c.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(d.table),
		Key:                       key(pk, single),
		ConditionExpression:       aws.String("#v = :v"),
		ExpressionAttributeNames:  map[string]string{"#v": attrVer},
		ExpressionAttributeValues: item{":v": num(version)},
	})
	if err == nil || !conflicted(err) && (!ambiguous(err) || ctx.Err() != nil) {
		return d.failed("delete", err)
	}
	it, gerr := d.get(ctx, pk, single)
	switch {
	case gerr != nil:
		return d.failed("delete", err)
	case it == nil:
		return nil
	case conflicted(err) || nOf(it, attrVer) != version:
		return record.ErrConflict
	}
	return d.failed("delete", err)
}
