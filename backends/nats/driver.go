package nats

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/internal/record"
	"github.com/hustings/hustings/events"
)

var (
	_ record.Driver   = (*bucket)(nil)
	_ record.Notifier = (*bucket)(nil)
)

const closeWrites = 64 // removals DeleteSession has in flight at once

// together runs f beside g (two requests, one round trip).
func together(f, g func() error) error {
	var ferr error
	var wg sync.WaitGroup
	wg.Go(func() { ferr = f() })
	gerr := g()
	wg.Wait()
	return errors.Join(ferr, gerr)
}

// CreateSession writes the session record, its TTL as the key's.
func (b *bucket) CreateSession(ctx context.Context, s record.Session) (uint64, error) {
	return b.write(ctx, sessionPrefix+s.ID, encode(sessionRecord{ID: s.Candidate}), 0, s.TTL)
}

// Renew writes the session record again on its last revision, beside a
// read of the held locks' records (confirm).
func (b *bucket) Renew(ctx context.Context, s record.Session, held []record.Lock) (record.Renewal, error) {
	var r record.Renewal
	err := together(func() (err error) {
		r.Locks, err = b.confirm(ctx, s.ID, held)
		return err
	}, func() (err error) {
		r.Version, r.Alive, err = b.renew(ctx, s)
		return err
	})
	r.Now = time.Now()
	return r, err
}

// renew writes the session record on revision s.Version, or again on
// the leader's revision of a record that lives (a renewal applied whose
// answer was lost; nobody else writes it); one gone is not alive.
func (b *bucket) renew(ctx context.Context, s record.Session) (uint64, bool, error) {
	key, last := sessionPrefix+s.ID, s.Version
	for range 2 {
		rev, err := b.write(ctx, key, encode(sessionRecord{ID: s.Candidate}), last, s.TTL)
		if !errors.Is(err, record.ErrConflict) {
			return rev, err == nil, err
		}
		e, err := b.getLeader(ctx, key)
		if err != nil || !e.live {
			return 0, false, err
		}
		last = e.rev
	}
	return 0, false, fmt.Errorf("nats: session record %s keeps changing", s.ID)
}

// confirm returns the held locks' records that name session sid; one a
// replica shows older than its take is read from the stream's leader.
func (b *bucket) confirm(ctx context.Context, sid string, held []record.Lock) ([]record.Lock, error) {
	keys := make([]string, len(held))
	for i, l := range held {
		keys[i] = LockKey(l.Name)
	}
	got, err := b.getMany(ctx, keys)
	var out []record.Lock
	for i, h := range held {
		e := got[keys[i]]
		if err == nil && e.rev < h.Version {
			e, err = b.getLeader(ctx, keys[i])
		}
		if l := decodeLock(h.Name, e); l.Session == sid {
			out = append(out, l)
		}
	}
	return out, err
}

// DeleteSession removes the held locks' records, each on the revision
// its take wrote, and the session record, all at once. Registry entries
// stay until Members finds their session gone.
func (b *bucket) DeleteSession(ctx context.Context, s record.Session, held []record.Lock) ([]string, error) {
	errs := make([]error, len(held))
	sem := make(chan struct{}, closeWrites)
	var wg sync.WaitGroup
	for i, l := range held {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = b.remove(ctx, LockKey(l.Name), l.Version)
		})
	}
	err := b.remove(ctx, sessionPrefix+s.ID, 0)
	wg.Wait()
	var freed []string
	for i, e := range errs {
		if e == nil {
			freed = append(freed, held[i].Name)
		} else if !errors.Is(e, record.ErrConflict) { // a conflict: no longer the session's
			err = errors.Join(err, e)
		}
	}
	return freed, err
}

// ReadLock reads the lock record from the stream's leader beside the
// reader's session record, then the holder's if another's.
func (b *bucket) ReadLock(ctx context.Context, name, self string) (record.View, error) {
	var e, mine entry
	err := together(func() (err error) {
		if self != "" {
			mine, err = b.session(ctx, self)
		}
		return err
	}, func() (err error) {
		e, err = b.getLeader(ctx, LockKey(name))
		return err
	})
	v := record.View{Lock: decodeLock(name, e), SelfAlive: mine.live, HolderAlive: mine.live, Now: time.Now()}
	if sid := v.Lock.Session; err == nil && sid != self {
		e, err = b.session(ctx, sid)
		v.HolderAlive = e.live
	}
	return v, err
}

// session reads session sid's record ("": none) from any replica, and
// from the stream's leader if that finds it gone.
func (b *bucket) session(ctx context.Context, sid string) (entry, error) {
	if sid == "" {
		return entry{}, nil
	}
	if e, err := b.get(ctx, sessionPrefix+sid); err != nil || e.live {
		return e, err
	}
	return b.getLeader(ctx, sessionPrefix+sid)
}

// CreateLock writes the lock record where the key has no message; over
// a marker or a record it is ErrConflict (the core reads it again).
func (b *bucket) CreateLock(ctx context.Context, l record.Lock) (record.Lock, error) {
	return b.SwapLock(ctx, l, 0)
}

// SwapLock writes the lock record on revision version, with the lease or
// hold as its per-key TTL. A take's token is the write's revision.
func (b *bucket) SwapLock(ctx context.Context, l record.Lock, version uint64) (record.Lock, error) {
	rec := lockRecord{Session: l.Session, ID: l.Candidate, Token: l.Token}
	if l.Hold {
		rec.Session = ""
	}
	rev, err := b.write(ctx, LockKey(l.Name), encode(rec), version, l.TTL)
	if err != nil {
		return record.Lock{}, err
	}
	if l.Token == 0 {
		l.Token = events.Token(rev)
	}
	l.Version, l.Expires, l.TTL = rev, time.Time{}, 0
	return l, nil
}

// DeleteLock removes the lock record on revision version.
func (b *bucket) DeleteLock(ctx context.Context, name string, version uint64) error {
	return b.remove(ctx, LockKey(name), version)
}

// Notify runs the bucket's feed: the writes to lock records, and the
// markers of session records.
func (b *bucket) Notify(ctx context.Context, f *record.Feed) error {
	fd, err := b.watchAll(ctx, func(key string, e entry) {
		switch {
		case strings.HasPrefix(key, lockPrefix):
			if name, ok := unkey(strings.TrimPrefix(key, lockPrefix)); ok {
				f.Changed(decodeLock(name, e))
			}
		case strings.HasPrefix(key, sessionPrefix) && !e.live:
			f.Ended(strings.TrimPrefix(key, sessionPrefix))
		}
		f.Progress(e.rev)
	})
	if err != nil {
		return err
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
