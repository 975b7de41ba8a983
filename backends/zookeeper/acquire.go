package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/validate"
)

// maxRounds bounds how often one call lists a lock's children again after
// finding that they changed under it.
const maxRounds = 16

// Acquire takes name if the session's node for it is, or becomes, the
// oldest live child of the lock. A free lock costs one round trip: the
// node's creation, in a transaction that also stamps the parent and so
// returns the node's czxid (the token) and the number of children. Under
// contention it lists the children and checks the older ones, deleting
// those whose session, lease or hold has ended. Without a lease the node
// stays queued when the lock is held (ErrHeld), so the session becomes the
// holder as soon as the older nodes go, and its next Acquire returns the
// token; with a lease the node is deleted again, so the lease counts from
// this call. Acquiring a lock the session holds costs one round trip
// (the node still exists) and keeps its first lease.
func (s *session) Acquire(ctx context.Context, name string, lease time.Duration) (events.Token, error) {
	if err := s.usable(); err != nil {
		return 0, err
	}
	if err := validate.Acquire(name, lease); err != nil {
		return 0, err
	}
	if err := s.enter(ctx, name); err != nil {
		return 0, err
	}
	defer s.leave(name)
	start := time.Now()
	if err := s.alive(ctx, start); err != nil {
		return 0, err
	}
	l := s.current(ctx, name, lease, start)
	switch {
	case l == nil:
		return s.join(ctx, name, lease, start)
	case l.granted:
		return s.reacquire(ctx, l, lease, start)
	case s.b.confirmedHeld(name, l.child):
		return 0, &heldError{name: name, watched: true}
	}
	return s.contend(ctx, l, lease, start, 0)
}

// current returns the session's node for name, unless there is none, its
// lease ended (the lock is lost: Lost reports it until an Acquire grants
// it again) or it is queued for another lease: then it deletes it and
// returns nil.
func (s *session) current(ctx context.Context, name string, lease time.Duration, start time.Time) *lock {
	l := s.lockOf(name)
	if l != nil && (l.leaseOver(start) || !l.granted && l.lease != lease) {
		s.lose(l)
		s.drop(ctx, l)
		return nil
	}
	return l
}

// join creates the session's node for name and takes the lock at once if
// it is the only child; else it contends.
func (s *session) join(ctx context.Context, name string, lease time.Duration, start time.Time) (events.Token, error) {
	l, st, err := s.create(ctx, name, lease, start)
	if err != nil {
		return 0, err
	}
	if st.NumChildren == 1 {
		return s.grant(l), nil
	}
	return s.contend(ctx, l, lease, start, st.Mtime)
}

// reacquire confirms that the session still holds l: its node exists.
// If it is gone (deleted by others, or behind the session's back) the lock
// is lost, and it joins anew.
func (s *session) reacquire(ctx context.Context, l *lock, lease time.Duration, start time.Time) (events.Token, error) {
	var ok bool
	err := s.b.call(ctx, "acquire", l.name, func() error {
		var err error
		ok, _, err = s.b.conn.Exists(l.path)
		return err
	})
	if err != nil {
		return 0, s.fail(ctx, "acquire "+l.name, err)
	}
	if ok {
		return s.grant(l), nil
	}
	s.lose(l)
	return s.join(ctx, l.name, lease, start)
}

// create makes the session's node for name, creating the lock's parent if
// needed. The transaction also writes the parent, whose new stat gives the
// node's czxid (same transaction), the server's time and the number of
// children.
func (s *session) create(ctx context.Context, name string, lease time.Duration, start time.Time) (*lock, *zk.Stat, error) {
	parent := s.b.lockPath(name)
	data := s.lockData
	if lease > 0 {
		data = encode(lockData{ID: s.id, Lease: millis(lease)})
	}
	req := &zk.CreateRequest{
		Path:  parent + "/" + s.sid + "-",
		Data:  data,
		Acl:   s.b.acl,
		Flags: zk.FlagEphemeral | zk.FlagSequence,
	}
	res, created, sent, err := s.createIn(ctx, "acquire", name, parent, req)
	if err != nil {
		return nil, nil, s.fail(ctx, "acquire "+name, err)
	}
	p, st := res[0].String, res[1].Stat
	s.b.clock.sample(st.Mtime, sent)
	l := &lock{name: name, child: path.Base(p), path: p, token: events.Token(st.Mzxid), lease: lease, start: start, judged: start}
	if err := s.adopt(ctx, l.path, created, func() bool { return s.record(l) }); err != nil {
		return nil, nil, err
	}
	return l, st, nil
}

// adopt records the node at p, just made, as the session's (record does,
// and reports false once the session is closed or lost), unless the
// session ended meanwhile: then it deletes the node, and the session node
// too if the same transaction created it, and returns the session's error.
func (s *session) adopt(ctx context.Context, p string, created bool, record func() bool) error {
	var err error
	switch {
	case s.b.conn.SessionID() != s.zkSession: // made on a new ZooKeeper session: ours is gone
		err = s.markLost(ctx, fmt.Errorf("ZooKeeper session %#x ended", s.zkSession))
	case !record(): // closed or lost meanwhile
		err = s.alive(ctx, time.Now())
	default:
		return nil
	}
	ops := []any{&zk.DeleteRequest{Path: p, Version: -1}}
	if created {
		ops = append(ops, &zk.DeleteRequest{Path: s.path, Version: -1})
	}
	_ = s.b.call(ctx, "delete", p, func() error {
		_, err := s.b.conn.Multi(ops...)
		return err
	})
	return err
}

// contend lists the lock's children until it finds out whether l is the
// oldest live one.
func (s *session) contend(ctx context.Context, l *lock, lease time.Duration, start time.Time, now int64) (events.Token, error) {
	for range maxRounds {
		v, err := s.b.lookOnce(ctx, l.name, s, l, &now)
		if err != nil {
			return 0, s.fail(ctx, "acquire "+l.name, err)
		}
		switch v.kind {
		case mine:
			return s.grant(l), nil
		case held:
			if l.lease > 0 {
				s.drop(ctx, l) // a lease counts from the Acquire that wins: no queueing
			}
			return 0, heldErr(l.name, v)
		case gone: // deleted by others: the session or the lease had ended
			s.forget(l)
			var st *zk.Stat
			if l, st, err = s.create(ctx, l.name, lease, start); err != nil {
				return 0, err
			}
			now = st.Mtime
		}
	}
	return 0, fmt.Errorf("%w: %q changed %d times while this candidate looked", backends.ErrHeld, l.name, maxRounds)
}

// heldErr is contend's error for the verdict v, held, on name.
func heldErr(name string, v verdict) error {
	return &heldError{name: name, holder: v.holder, ahead: v.ahead}
}

// heldError is Acquire's error for a lock another holds: it matches
// backends.ErrHeld and writes its message only when asked, since a
// waiter in a loop of contended runs gets two per turn and reads none.
type heldError struct {
	name    string
	holder  backends.Holder // the holder, if it was judged
	ahead   int             // else the nodes ahead of the session's own
	watched bool            // a watch found the node ahead of the session's still there
}

func (e *heldError) Error() string {
	switch {
	case e.watched:
		return fmt.Sprintf("%v: %q: the node ahead of its own is still there", backends.ErrHeld, e.name)
	case e.holder.ID == "":
		return fmt.Sprintf("%v: %q: %d nodes ahead in its queue", backends.ErrHeld, e.name, e.ahead)
	}
	return fmt.Sprintf("%v: %q by %s (token %d)", backends.ErrHeld, e.name, e.holder.ID, e.holder.Token)
}

func (e *heldError) Unwrap() error { return backends.ErrHeld }

// Release deletes the session's node of name, which wakes the next
// waiter. With a hold, the same transaction creates the persistent hold
// marker, holding the releasing candidate's ID and token, which others
// honour until hold after its creation. Whatever its outcome, name under
// token leaves Lost: the session claims it no more.
func (s *session) Release(ctx context.Context, name string, token events.Token, hold time.Duration) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := validate.Release(name, hold); err != nil {
		return err
	}
	s.ledger.Released(name, token)
	if err := s.enter(ctx, name); err != nil {
		return err
	}
	defer s.leave(name)
	start := time.Now()
	if err := s.alive(ctx, start); err != nil {
		if errors.Is(err, backends.ErrSessionLost) {
			return fmt.Errorf("%w: %q: %w", backends.ErrNotHeld, name, err)
		}
		return err
	}
	l := s.lockOf(name)
	if l == nil || !l.granted || l.token != token {
		return fmt.Errorf("%w: %q under token %d by this session of %s", backends.ErrNotHeld, name, token, s.id)
	}
	if l.leaseOver(start) {
		s.drop(ctx, l)
		return fmt.Errorf("%w: %q: its lease %v ended", backends.ErrNotHeld, name, l.lease)
	}
	return s.release(ctx, l, hold)
}

// release deletes l's node: a plain delete, or with a hold a
// transaction that also creates the hold marker.
func (s *session) release(ctx context.Context, l *lock, hold time.Duration) error {
	del := func() error { return s.b.conn.Delete(l.path, -1) }
	if hold > 0 {
		marker := &zk.CreateRequest{
			Path: s.b.lockPath(l.name) + "/" + holdNode,
			Data: encode(holdData{ID: s.id, Token: uint64(l.token), Hold: millis(hold)}),
			Acl:  s.b.acl,
		}
		del = func() error {
			_, err := s.b.conn.Multi(&zk.DeleteRequest{Path: l.path, Version: -1}, marker)
			return err
		}
	}
	err := s.b.call(ctx, "release", l.name, del)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		s.forget(l)
		return fmt.Errorf("%w: %q: its node is gone (expired)", backends.ErrNotHeld, l.name)
	case err != nil:
		return s.fail(ctx, "release "+l.name, err)
	}
	s.forget(l)
	return nil
}
