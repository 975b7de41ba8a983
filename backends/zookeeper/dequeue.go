package zookeeper

import (
	"context"
	"errors"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hustings/hustings/internal/validate"
)

// Dequeue takes the session's node out of name's queue, one round trip,
// unless an Acquire returned the node's token (the session was told it
// holds the lock): that node is left alone. A node the queue made the
// holder without the session being told is deleted all the same, which
// frees the lock and wakes the waiter watching it. A session with no node
// for name makes no request and returns nil. It waits for an Acquire or
// Release of name by the session in progress. If the delete fails the node
// stays the session's, for a later Dequeue, Acquire or Close.
func (s *session) Dequeue(ctx context.Context, name string) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := validate.Name(name); err != nil {
		return err
	}
	if err := s.enter(ctx, name); err != nil {
		return err
	}
	defer s.leave(name)
	if err := s.alive(ctx, time.Now()); err != nil {
		return err
	}
	l := s.lockOf(name)
	if l == nil || l.granted {
		return nil
	}
	s.ledger.Released(name, 0) // the node may hold the lock: this is a release
	err := s.b.call(ctx, "dequeue", name, func() error { return s.b.conn.Delete(l.path, -1) })
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return s.fail(ctx, "dequeue "+name, err)
	}
	s.forget(l)
	return nil
}
