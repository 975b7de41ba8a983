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
	_ record.Driver    = (*driver)(nil)
	_ record.Registrar = (*driver)(nil)
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
