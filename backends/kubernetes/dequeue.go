package kubernetes

import (
	"context"
	"time"

	coordv1 "k8s.io/api/coordination/v1"

	"github.com/hustings/hustings/internal/validate"
)

// Dequeue takes the session out of name's line, if it joined it (see
// Acquire): one GET and one update of the lock Lease, conditioned on the
// version read (read again after a conflict). If the line has named the
// session the holder and no Acquire has told it so, the lock is handed
// over as a Release hands it over (to the next live waiter, or free). A
// lock the session was told it holds is left alone. A session not in
// name's line makes no request and returns nil; one whose update fails
// stays in line, for a later Dequeue, Acquire or Close.
func (s *session) Dequeue(ctx context.Context, name string) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := validate.Name(name); err != nil {
		return err
	}
	if err := ctxErr(ctx, "dequeue"); err != nil {
		return err
	}
	return s.leave(ctx, name)
}

// leave is Dequeue without its checks, for Close too.
func (s *session) leave(ctx context.Context, name string) error {
	since, ok := s.namedSince(name)
	if !ok {
		return nil
	}
	err := s.b.update(ctx, "dequeue", s.b.LockLease(name), nil, func() error { return nil }, func(l *coordv1.Lease) (*coordv1.Lease, error) {
		t, err := s.b.term(l, name)
		switch {
		case err != nil:
			return nil, err
		case t.session == s.lease && t.hold == 0 && t.token >= since:
			if tok, told := s.ledger.Held()[name]; told && tok == t.token {
				return nil, nil // its own term, which Release ends
			}
			return s.b.handover(ctx, l, time.Now()), nil
		case inLine(lineOf(l), s.lease):
			next := l.DeepCopy()
			setLine(next, without(lineOf(l), s.lease))
			return next, nil
		}
		return nil, nil
	})
	if err == nil {
		s.unqueued(name)
	}
	return err
}
