package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
)

// kind is what one look at a lock's children found.
type kind int

const (
	free   kind = iota // no live child, no hold: nobody holds the lock
	held               // another session's node, or a hold, holds it
	mine               // the caller's node is the oldest live child
	gone               // the caller's node is not among the children
	relist             // the children changed while we looked: list again
)

// verdict is the outcome of one look.
type verdict struct {
	kind   kind
	holder backends.Holder // for held, if the holder was judged
	ahead  int             // for held, unjudged: the nodes ahead of the caller's
}

// judgeEvery is how often a look for a node queued behind another waiter
// judges the nodes ahead of it (see walk): the Backend's default.
// Shorter than the retry interval of the waiters' polls, so that each
// poll judges them.
const judgeEvery = 50 * time.Millisecond

// look returns who holds name, listing the children again as long as they
// change under it (at most maxRounds times).
func (b *Backend) look(ctx context.Context, name string, s *session) (verdict, error) {
	var now int64
	for range maxRounds {
		v, err := b.lookOnce(ctx, name, s, nil, &now)
		if err != nil || v.kind != relist {
			return v, err
		}
	}
	return verdict{}, fmt.Errorf("%w: zookeeper: lock %q changed %d times while we looked", backends.ErrUnavailable, name, maxRounds)
}

// lookOnce lists the children of name once and walks them oldest first:
// an expired hold marker, dead nodes (session node gone or past its TTL,
// lease over) and orphans of session s (nodes of s other than l, left by
// calls whose answer was lost) are deleted on the way; the first live node
// or live hold decides. *now is the server's clock, read when first needed
// (0 until then). A node that vanished, or a delete that failed, means
// others acted meanwhile, maybe placing a hold: the verdict is relist.
func (b *Backend) lookOnce(ctx context.Context, name string, s *session, l *lock, now *int64) (verdict, error) {
	var parent string
	if l != nil {
		parent = l.parent()
	} else {
		parent = b.lockPath(name)
	}
	names, found, err := b.children(ctx, name, parent)
	switch {
	case err != nil:
		return verdict{}, err
	case !found:
		return verdict{kind: none(l)}, nil
	}
	b.listed(name, names)
	kids, hold := queue(names)
	v, err := b.walk(ctx, parent, kids, hold, s, l, now)
	if err == nil && v.kind != held && v.kind != relist {
		b.seen.forget(parent) // no other session holds it
	}
	return v, err
}

// walk goes through the children of parent, oldest first (see lookOnce).
// A queued node l (without a lease) that is not next in line, whose nodes
// ahead were judged less than judgeEvery ago (or which was made less than
// that ago), is held without judging them: one listing. The node next in
// line judges the holder at each look, and each waiter's poll, at its
// retry interval, judges and deletes whatever is dead ahead of it; a
// waiter that has just joined the queue, or is trying again at once after
// setting its watch, need not.
func (b *Backend) walk(ctx context.Context, parent string, kids []child, hold bool, s *session, l *lock, now *int64) (verdict, error) {
	if l != nil && l.lease == 0 {
		t := time.Now()
		if i := slices.IndexFunc(kids, func(c child) bool { return c.name == l.child }); i >= 2 && t.Sub(l.judged) < b.judgeEvery {
			return verdict{kind: held, ahead: i}, nil
		}
		l.judged = t
	}
	if hold {
		v, err := b.checkHold(ctx, parent, now)
		if err != nil || v.kind != free {
			return v, err
		}
	}
	for _, c := range kids {
		if l != nil && c.name == l.child {
			return verdict{kind: mine}, nil
		}
		p := parent + "/" + c.name
		if s != nil && c.sid == s.sid {
			if err := b.deleteNode(ctx, p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
				return verdict{}, err
			}
			continue
		}
		v, err := b.judge(ctx, parent, c, now)
		if err != nil || v.kind != free {
			return v, err
		}
	}
	return verdict{kind: none(l)}, nil
}

// none is the verdict when no live child was found: the caller's node, if
// it has one, is gone.
func none(l *lock) kind {
	if l != nil {
		return gone
	}
	return free
}

// checkHold reads the hold marker of the lock at parent: held while the
// hold lasts; deleted and free once it is over.
func (b *Backend) checkHold(ctx context.Context, parent string, now *int64) (verdict, error) {
	p := parent + "/" + holdNode
	var d holdData
	st, err := b.get(ctx, p, &d)
	if err != nil || st == nil {
		return verdict{kind: relist}, err
	}
	if err := b.readClock(ctx, parent, now); err != nil {
		return verdict{}, err
	}
	if *now < st.Ctime+d.Hold {
		return verdict{kind: held, holder: backends.Holder{ID: d.ID, Token: events.Token(d.Token), Expires: time.UnixMilli(st.Ctime + d.Hold)}}, nil
	}
	return b.deleted(b.deleteNode(ctx, p, st.Version))
}

// judge decides whether child c of parent is alive: its session node
// exists and was renewed less than its TTL ago, and its lease, if any, is
// not over. A dead child is deleted (with its session node, if that
// expired) and the verdict is free. What was read of a child judged alive
// before, and of its session, answers without a request while it shows
// the child alive (see seen); any other verdict is reached on fresh reads
// of both: a child of a lock's parent made again has the name of one of
// the old parent's, and what was read of that one says nothing of it.
func (b *Backend) judge(ctx context.Context, parent string, c child, now *int64) (verdict, error) {
	if n, ok := b.seen.child(parent, c.name); ok {
		if sn, ok := b.seen.session(c.sid); ok && b.before(holder(n, sn), *now) {
			return holder(n, sn).verdict, nil
		}
	}
	var d lockData
	st, err := b.get(ctx, parent+"/"+c.name, &d)
	if err != nil || st == nil {
		return verdict{kind: relist}, err
	}
	return b.judgeRead(ctx, parent, c, seenChild{name: c.name, data: d, ctime: st.Ctime, czxid: st.Czxid, version: st.Version}, now)
}

// judgeRead judges c, whose node n was just read, on a fresh read of its
// session's node.
func (b *Backend) judgeRead(ctx context.Context, parent string, c child, n seenChild, now *int64) (verdict, error) {
	p := parent + "/" + c.name
	sp := b.sessionsPath() + "/" + c.sid
	var sd sessionData
	sst, err := b.get(ctx, sp, &sd)
	switch {
	case err != nil:
		return verdict{}, err
	case sst == nil: // its session was closed or expired
		return b.deleted(b.deleteNode(ctx, p, n.version))
	}
	sn := seenSession{data: sd, mtime: sst.Mtime, version: sst.Version}
	alive := holder(n, sn)
	if !b.before(alive, *now) { // it may have expired: judge it on the server's clock (a write)
		if err := b.readClock(ctx, parent, now); err != nil {
			return verdict{}, err
		}
		switch {
		case n.data.Lease > 0 && *now >= n.ctime+n.data.Lease:
			return b.deleted(b.deleteNode(ctx, p, n.version))
		case *now >= sn.mtime+sd.TTL:
			return b.deleted(b.deleteNodes(ctx, sp, sn.version, p, n.version))
		}
	}
	b.seen.alive(parent, n, c.sid, sn, &b.clock)
	return alive.verdict, nil
}

// before reports whether the server's clock has not reached alive's
// deadline: now, if the look read the clock already, else a recent
// sample of it, padded (a deadline the sample cannot show ahead is
// judged on a fresh read).
func (b *Backend) before(alive live, now int64) bool {
	if now != 0 {
		return now < alive.until
	}
	up, ok := b.clock.upper()
	return ok && up < alive.until
}

// live is the verdict on a holder that is alive until the server's clock
// reaches until (ms since the epoch).
type live struct {
	verdict verdict
	until   int64
}

// holder is the verdict on the lock child n, whose session node is sn,
// while neither has expired.
func holder(n seenChild, sn seenSession) live {
	until := sn.mtime + sn.data.TTL
	if n.data.Lease > 0 {
		until = min(until, n.ctime+n.data.Lease)
	}
	c, _ := parseChild(n.name)
	h := backends.Holder{ID: n.data.ID, Token: events.Token(n.czxid), Expires: time.UnixMilli(until), Session: c.sid}
	return live{verdict{kind: held, holder: h}, until}
}

// deleted is the verdict after deleting a dead node: free to go on if the
// delete went through, relist if the node had changed or gone.
func (b *Backend) deleted(err error) (verdict, error) {
	switch {
	case errors.Is(err, zk.ErrNoNode), errors.Is(err, zk.ErrBadVersion):
		return verdict{kind: relist}, nil
	case err != nil:
		return verdict{}, err
	}
	return verdict{kind: free}, nil
}

// get reads the node p into v. A missing node is a nil stat and no error.
func (b *Backend) get(ctx context.Context, p string, v any) (*zk.Stat, error) {
	var data []byte
	var st *zk.Stat
	err := b.call(ctx, "read", p, func() error {
		var err error
		data, st, err = b.conn.Get(p)
		return err
	})
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return nil, nil
	case err != nil:
		return nil, fail(ctx, "read "+p, err)
	}
	if err := decode(p, data, v); err != nil {
		return nil, fmt.Errorf("%w: %w", backends.ErrUnavailable, err)
	}
	return st, nil
}

// readClock reads the server's clock into *now unless it was read already.
func (b *Backend) readClock(ctx context.Context, parent string, now *int64) error {
	if *now != 0 {
		return nil
	}
	t, err := b.now(ctx, parent)
	if err != nil {
		return fail(ctx, "read the server clock", err)
	}
	*now = t
	return nil
}

// deleteNode deletes p at version. zk.ErrNoNode and zk.ErrBadVersion are
// returned as they are, other errors translated.
func (b *Backend) deleteNode(ctx context.Context, p string, version int32) error {
	err := b.call(ctx, "delete", p, func() error { return b.conn.Delete(p, version) })
	return keepRace(ctx, "delete", p, err)
}

// deleteNodes deletes an expired session node and its lock child in one
// transaction, so that a renewal that came first (a new version) keeps
// both.
func (b *Backend) deleteNodes(ctx context.Context, sp string, sv int32, p string, v int32) error {
	err := b.call(ctx, "delete", p, func() error {
		_, err := b.conn.Multi(&zk.DeleteRequest{Path: sp, Version: sv}, &zk.DeleteRequest{Path: p, Version: v})
		return err
	})
	return keepRace(ctx, "delete", p, err)
}

// keepRace returns the errors that mean "others acted first" as they are
// and translates the others, of the call op on object.
func keepRace(ctx context.Context, op, object string, err error) error {
	if err == nil || errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrBadVersion) {
		return err
	}
	return fail(ctx, what(op, object), err)
}
