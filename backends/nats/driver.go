package nats

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/internal/record"
	"github.com/hustings/hustings/events"
)

// driver is the record.Driver of the backend: the records are keys of
// the bucket, written by publishes conditioned on their last revision.
type driver struct {
	b *bucket
}

var (
	_ record.Driver    = (*driver)(nil)
	_ record.Notifier  = (*driver)(nil)
	_ record.Registrar = (*driver)(nil)
)

// closeWrites bounds the removals DeleteSession has in flight at once.
const closeWrites = 64

// CreateSession writes the session record with the TTL as its per-key
// TTL: one publish.
func (d *driver) CreateSession(ctx context.Context, s record.Session) (uint64, error) {
	rev, err := d.b.write(ctx, sessionPrefix+s.ID, encode(sessionRecord{ID: s.Candidate}), 0, s.TTL)
	return rev, d.failed(err)
}

// Renew writes the session record again on its last revision, with the
// TTL, and reads the held locks' records (one multi-key get per 1,024),
// sent together: one round trip.
func (d *driver) Renew(ctx context.Context, s record.Session, held []record.Lock) (record.Renewal, error) {
	var (
		r    record.Renewal
		got  []record.Lock
		gerr error
		wg   sync.WaitGroup
	)
	if len(held) > 0 {
		wg.Go(func() { got, gerr = d.confirm(ctx, s.ID, held) })
	}
	rev, alive, err := d.renew(ctx, s)
	wg.Wait()
	if err = errors.Join(err, gerr); err != nil {
		return r, d.failed(err)
	}
	return record.Renewal{Alive: alive, Version: rev, Locks: got, Now: time.Now()}, nil
}

// renew writes the session record on revision s.Version. A write that
// finds another revision reads the record from the stream's leader: if
// it is still the session's (an earlier renewal applied whose answer was
// lost), it writes again on that revision; if it is gone, the session is
// not alive.
func (d *driver) renew(ctx context.Context, s record.Session) (uint64, bool, error) {
	key, last := sessionPrefix+s.ID, s.Version
	for range 2 {
		rev, err := d.b.write(ctx, key, encode(sessionRecord{ID: s.Candidate}), last, s.TTL)
		if !errors.Is(err, errChanged) {
			return rev, err == nil, err
		}
		e, err := d.b.getLeader(ctx, key)
		if err != nil {
			return 0, false, err
		}
		var rec sessionRecord
		if !e.live || json.Unmarshal(e.value, &rec) != nil || rec.ID != s.Candidate {
			return 0, false, nil
		}
		last = e.rev
	}
	return 0, false, fmt.Errorf("nats: session record %s keeps changing", s.ID)
}

// confirm reads the held locks' records and returns those that name
// session sid. A record a replica shows older than its take is read from
// the stream's leader.
func (d *driver) confirm(ctx context.Context, sid string, held []record.Lock) ([]record.Lock, error) {
	keys := make([]string, len(held))
	for i, l := range held {
		keys[i] = LockKey(l.Name)
	}
	got, err := d.b.getMany(ctx, keys)
	if err != nil {
		return nil, err
	}
	var out []record.Lock
	for _, h := range held {
		e := got[LockKey(h.Name)]
		if e.rev < h.Version {
			if e, err = d.b.getLeader(ctx, LockKey(h.Name)); err != nil {
				return nil, err
			}
		}
		if l := decodeLock(h.Name, e); l.Session == sid {
			out = append(out, l)
		}
	}
	return out, nil
}

// DeleteSession removes the held locks' records, each on the revision
// its take wrote, and the session record, all at once. Registry entries
// stay until Members finds their session gone.
func (d *driver) DeleteSession(ctx context.Context, s record.Session, held []record.Lock) ([]string, error) {
	errs := make([]error, len(held))
	sem := make(chan struct{}, closeWrites)
	var wg sync.WaitGroup
	for i, l := range held {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = d.b.remove(ctx, LockKey(l.Name), l.Version)
		})
	}
	err := d.removeSession(ctx, s)
	wg.Wait()
	var freed []string
	for i, e := range errs {
		switch {
		case e == nil:
			freed = append(freed, held[i].Name)
		case !errors.Is(e, errChanged):
			err = errors.Join(err, e)
		}
	}
	if errors.Is(err, errChanged) {
		return freed, fmt.Errorf("%w: nats: session %s", backends.ErrSessionLost, s.ID)
	}
	return freed, d.failed(err)
}

// removeSession removes the session record on revision s.Version; if it
// finds another, it reads the record from the stream's leader and, if it
// is still the session's (a renewal applied whose answer was lost),
// removes it on that revision.
func (d *driver) removeSession(ctx context.Context, s record.Session) error {
	key := sessionPrefix + s.ID
	err := d.b.remove(ctx, key, s.Version)
	if !errors.Is(err, errChanged) {
		return err
	}
	e, gerr := d.b.getLeader(ctx, key)
	if gerr != nil || !e.live {
		return errors.Join(err, gerr)
	}
	return d.b.remove(ctx, key, e.rev)
}

// ReadLock reads the lock record from the stream's leader, beside the
// reading session's own record; then, for a record another session
// holds, that session's record. A session record a replica shows gone is
// read again from the leader, since a write will rely on it.
func (d *driver) ReadLock(ctx context.Context, name, self string) (record.View, error) {
	var (
		e         entry
		selfAlive bool
		err, serr error
		wg        sync.WaitGroup
	)
	if self != "" {
		wg.Go(func() { e, err := d.session(ctx, self); selfAlive, serr = e.live, err })
	}
	e, err = d.b.getLeader(ctx, LockKey(name))
	wg.Wait()
	if err = errors.Join(err, serr); err != nil {
		return record.View{}, d.failed(err)
	}
	v := record.View{Lock: decodeLock(name, e), SelfAlive: selfAlive, Now: time.Now()}
	switch sid := v.Lock.Session; {
	case sid == "":
	case sid == self:
		v.HolderAlive = selfAlive
	default:
		h, err := d.session(ctx, sid)
		if err != nil {
			return record.View{}, d.failed(err)
		}
		v.HolderAlive = h.live
	}
	return v, nil
}

// session reads session sid's record: a direct get, and if that finds it
// gone, a read of the stream's leader (a replica may lag behind it).
func (d *driver) session(ctx context.Context, sid string) (entry, error) {
	e, err := d.b.get(ctx, sessionPrefix+sid)
	if err == nil && !e.live {
		e, err = d.b.getLeader(ctx, sessionPrefix+sid)
	}
	return e, err
}

// CreateLock writes the lock record where the key has no message; a
// marker or a record is ErrConflict, and the core reads it again.
func (d *driver) CreateLock(ctx context.Context, l record.Lock) (record.Lock, error) {
	return d.SwapLock(ctx, l, 0)
}

// SwapLock writes the lock record on revision version, with the lease or
// hold as its per-key TTL (whole seconds, rounded up). A take's token is
// the write's revision.
func (d *driver) SwapLock(ctx context.Context, l record.Lock, version uint64) (record.Lock, error) {
	rec := lockRecord{Session: l.Session, ID: l.Candidate, Token: l.Token}
	if l.Hold {
		rec.Session = ""
	}
	rev, err := d.b.write(ctx, LockKey(l.Name), encode(rec), version, l.TTL)
	if err != nil {
		return record.Lock{}, d.failed(err)
	}
	if l.Token == 0 {
		l.Token = events.Token(rev)
	}
	l.Version, l.Expires, l.TTL = rev, time.Time{}, 0
	return l, nil
}

// DeleteLock removes the lock record on revision version.
func (d *driver) DeleteLock(ctx context.Context, name string, version uint64) error {
	return d.failed(d.b.remove(ctx, LockKey(name), version))
}

// Notify runs the bucket's feed: every write to a lock record, and the
// markers of session records that expired or were removed.
func (d *driver) Notify(ctx context.Context, f *record.Feed) error {
	fd, err := d.b.watchAll(ctx, func(c change) {
		switch {
		case strings.HasPrefix(c.key, lockPrefix):
			if name, ok := unkey(strings.TrimPrefix(c.key, lockPrefix)); ok {
				f.Changed(decodeLock(name, entry{value: c.value, rev: c.rev, live: c.live}))
			}
		case strings.HasPrefix(c.key, sessionPrefix) && !c.live:
			f.Ended(strings.TrimPrefix(c.key, sessionPrefix))
		}
		f.Progress(c.rev)
	})
	if err != nil {
		return d.failed(err)
	}
	f.Ready()
	select {
	case <-ctx.Done():
		fd.Stop()
		<-fd.Closed() // the handler returned for good
		return nil
	case <-fd.Closed():
		return fmt.Errorf("%w: nats: the bucket's feed ended (the connection closed)", backends.ErrUnavailable)
	}
}

// failed translates the bucket's errors for the core: a failed revision
// condition is record.ErrConflict, a closed connection ErrInvalid, a
// missing bucket ErrUnavailable naming CreateBucket.
func (d *driver) failed(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, errChanged):
		return record.ErrConflict
	case errors.Is(err, nats.ErrConnectionClosed):
		return fmt.Errorf("%w: nats: the connection is closed", backends.ErrInvalid)
	case errors.Is(err, errNoBucket), errors.Is(err, nats.ErrNoResponders):
		return fmt.Errorf("%w: nats: no stream %s answers (was CreateBucket run? is JetStream up?): %w",
			backends.ErrUnavailable, d.b.stream, err)
	}
	return err
}
