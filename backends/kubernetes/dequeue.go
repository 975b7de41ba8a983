package kubernetes

import (
	"context"
	"fmt"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hustings/hustings/backends"
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
	for try := range conflictTries {
		if try > 0 {
			pause(ctx, try)
		}
		l, err := s.b.leases.Get(ctx, s.b.LockLease(name), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			s.unqueued(name)
			return nil
		case err != nil:
			return translate(ctx, "dequeue", err)
		}
		t, err := s.b.term(l, name)
		if err != nil {
			return err
		}
		var next *coordv1.Lease
		switch {
		case t.session == s.lease && t.hold == 0 && t.token >= since:
			if tok, told := s.ledger.Held()[name]; told && tok == t.token {
				s.unqueued(name)
				return nil
			}
			next = s.b.handover(ctx, l, time.Now())
		case inLine(lineOf(l), s.lease):
			next = l.DeepCopy()
			setLine(next, without(lineOf(l), s.lease))
		default:
			s.unqueued(name)
			return nil
		}
		_, err = s.b.leases.Update(ctx, next, metav1.UpdateOptions{})
		switch {
		case apierrors.IsConflict(err):
			continue
		case apierrors.IsNotFound(err):
		case err != nil:
			return translate(ctx, "dequeue", err)
		}
		s.unqueued(name)
		return nil
	}
	return fmt.Errorf("%w: kubernetes: dequeue: %q changed under %d tries in a row", backends.ErrUnavailable, name, conflictTries)
}
