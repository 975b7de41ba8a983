package kubernetes

import (
	"context"
	"fmt"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/validate"
)

// maxTries bounds how often one call reads a lock Lease again after its
// write was refused on a stale resourceVersion (409 Conflict): another
// candidate took it, or a fenced write changed it.
const maxTries = 5

// Acquire takes name if its Lease is free, or its holder's term is over
// (released, its lease or hold ended, its session gone or judged expired
// by this process's clock), or held by this session (then it returns the
// same token). It reads the lock Lease (creating it free on first use,
// one more write, ever) unless the Backend's watch delivered it (a
// waiter watches its lock: see watched), judges its holder (one more GET
// of the holder's session Lease when another session holds it, unless
// the watch delivered that Lease within its TTL), and
// takes it with one update conditioned on the resourceVersion read,
// recording that resourceVersion as the token. A lock held by a live
// session is ErrHeld, found without any write.
func (s *session) Acquire(ctx context.Context, name string, lease time.Duration) (events.Token, error) {
	if err := s.usable(); err != nil {
		return 0, err
	}
	if err := validate.Acquire(name, lease); err != nil {
		return 0, err
	}
	if err := ctxErr(ctx, "acquire"); err != nil {
		return 0, err
	}
	for try := range maxTries {
		start := time.Now()
		if s.expired(start) {
			return 0, s.markLost()
		}
		l := s.watched(name, try)
		if l == nil {
			var err error
			if l, err = s.b.lockLease(ctx, name); err != nil {
				return 0, err
			}
		}
		t, err := s.b.term(l, name)
		if err != nil {
			return 0, err
		}
		live, err := s.b.live(ctx, t, start, s)
		switch {
		case err != nil:
			return 0, err
		case live && t.session == s.lease:
			s.granted(name, t.token, lease, start)
			s.remember(name, t.token, l)
			return t.token, nil
		case live:
			again, err := s.stand(ctx, name, l, lease)
			switch {
			case again:
				continue
			case err != nil:
				return 0, err
			}
			return 0, fmt.Errorf("%w: %q by %s", backends.ErrHeld, name, t.candidate)
		}
		tok, err := tokenOf(l.ResourceVersion)
		if err != nil {
			return 0, fmt.Errorf("%w: %w", backends.ErrUnavailable, err)
		}
		took, err := s.b.leases.Update(ctx, s.take(l, tok, lease, start), metav1.UpdateOptions{})
		switch {
		case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
			continue // changed since read: read again
		case err != nil:
			return 0, translate(ctx, "acquire", err)
		}
		if t := termOf(took); t.timed() {
			s.b.seen.see(lockKey(name), t.mark())
		}
		s.granted(name, tok, lease, start)
		s.remember(name, tok, took)
		return tok, nil
	}
	return 0, fmt.Errorf("%w: %q changed under %d tries in a row", backends.ErrHeld, name, maxTries)
}

// watched returns, for the first try of an Acquire, the Lease of the
// lock name as the Backend's watch last delivered it (a candidate that
// waits for name watches it), if there is one and it does not name this
// session; nil otherwise, and the Lease is read. A stale copy costs a
// conflict (the take is conditioned on its resourceVersion) or an
// ErrHeld that the watch's next signal corrects, never a grant: so the
// session must not find itself the holder in it, as the copy may be from
// before its own release; unless the session is in name's line and the
// copy names it under a token from after it joined: a release named it,
// and only its own Release, Dequeue or Close can have ended that term
// (or its expiry, which Acquire checks first).
func (s *session) watched(name string, try int) *coordv1.Lease {
	if try > 0 {
		return nil
	}
	l := s.b.hub.lease(name)
	if l == nil || l.Labels[labelSession] != s.lease {
		return l
	}
	since, queued := s.namedSince(name)
	if t := termOf(l); queued && t.session == s.lease && t.token >= since && t.hold == 0 {
		return l
	}
	return nil
}

// granted records a grant in the ledger, and its lease's end.
func (s *session) granted(name string, tok events.Token, lease time.Duration, start time.Time) {
	s.ledger.Granted(name, tok)
	s.unqueued(name)
	s.mu.Lock()
	defer s.mu.Unlock()
	if lease == 0 {
		delete(s.ends, name)
		return
	}
	if lt, ok := s.ends[name]; ok && lt.token == tok {
		return // granted again: the first lease stays
	}
	if s.ends == nil {
		s.ends = map[string]leaseTerm{}
	}
	s.ends[name] = leaseTerm{token: tok, end: start.Add(lease)}
}

// lockLease reads the Lease of lock name, creating it free if it does
// not exist.
func (b *Backend) lockLease(ctx context.Context, name string) (*coordv1.Lease, error) {
	l, err := b.leases.Get(ctx, b.LockLease(name), metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		return l, translate(ctx, "acquire", err)
	}
	fresh := &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{
		Name: b.LockLease(name), Labels: b.labels(kindLock), Annotations: map[string]string{annName: name},
	}}
	l, err = b.leases.Create(ctx, fresh, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		l, err = b.leases.Get(ctx, b.LockLease(name), metav1.GetOptions{})
	case apierrors.IsNotFound(err):
		return nil, b.missingNamespace("acquire", err)
	}
	return l, translate(ctx, "acquire", err)
}

// take returns l taken by the session under tok: holderIdentity,
// acquireTime, renewTime and leaseDurationSeconds as client-go writes
// them (leaseTransitions counts changes of holderIdentity), the session
// label and the token annotation.
func (s *session) take(l *coordv1.Lease, tok events.Token, lease time.Duration, now time.Time) *coordv1.Lease {
	l = l.DeepCopy()
	prev := l.Spec.HolderIdentity
	transitions := int32(0)
	if l.Spec.LeaseTransitions != nil {
		transitions = *l.Spec.LeaseTransitions
	}
	if prev != nil && *prev != s.id {
		transitions++
	}
	d := s.ttl
	if lease > 0 {
		d = min(d, lease)
	}
	l.Spec = coordv1.LeaseSpec{
		HolderIdentity:       &s.id,
		LeaseDurationSeconds: seconds(d),
		AcquireTime:          micro(now),
		RenewTime:            micro(now),
		LeaseTransitions:     &transitions,
	}
	for k, v := range s.b.labels(kindLock) {
		l.Labels[k] = v
	}
	l.Labels[labelSession] = s.lease
	l.Annotations[annToken] = fmt.Sprint(uint64(tok))
	setLine(l, without(lineOf(l), s.lease))
	delete(l.Annotations, annHoldMS)
	delete(l.Annotations, annLeaseMS)
	if lease > 0 {
		l.Annotations[annLeaseMS] = ms(lease)
	}
	return l
}

// free returns l released as client-go releases a Lease: no holder,
// leaseDurationSeconds 1, acquireTime and renewTime now, leaseTransitions
// kept; the session label and the token go.
func free(l *coordv1.Lease, now time.Time) *coordv1.Lease {
	l = l.DeepCopy()
	l.Spec.HolderIdentity = new("")
	l.Spec.LeaseDurationSeconds = new(int32(1))
	l.Spec.AcquireTime, l.Spec.RenewTime = micro(now), micro(now)
	delete(l.Labels, labelSession)
	for _, k := range []string{annToken, annLeaseMS, annHoldMS} {
		delete(l.Annotations, k)
	}
	return l
}

// released returns l released by its holder: held by nobody alive for
// hold, or else handed over.
func (b *Backend) released(ctx context.Context, l *coordv1.Lease, hold time.Duration, now time.Time) *coordv1.Lease {
	if hold > 0 {
		return held(l, hold, now)
	}
	return b.handover(ctx, l, now)
}

// held returns l released with a hold: the holder and token stay, the
// session goes, and the hold is recorded (and as leaseDurationSeconds).
func held(l *coordv1.Lease, hold time.Duration, now time.Time) *coordv1.Lease {
	l = l.DeepCopy()
	l.Spec.LeaseDurationSeconds = seconds(hold)
	l.Spec.RenewTime = micro(now)
	delete(l.Labels, labelSession)
	delete(l.Annotations, annLeaseMS)
	l.Annotations[annHoldMS] = ms(hold)
	return l
}

// Release hands name over (to the oldest live waiter in its line, or
// free: see handover), or keeps it held by nobody alive for hold, if its
// Lease names this session under token: one update conditioned on the
// resourceVersion the session's take (or its last Acquire) left it at,
// or the later one at which its watch saw a waiter join (see fresher).
// If the Lease changed since (409 Conflict: a fenced write), or the
// session does not remember it (a Lease that carries more than the
// backend's own labels and annotations), it reads the Lease and updates
// it conditioned on the version read (again after a conflict, such as a
// waiter joining the line meanwhile). Whatever its outcome, the session
// claims name under token no more.
func (s *session) Release(ctx context.Context, name string, token events.Token, hold time.Duration) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := validate.Release(name, hold); err != nil {
		return err
	}
	s.ledger.Released(name, token)
	s.mu.Lock()
	if lt, ok := s.ends[name]; ok && lt.token == token {
		delete(s.ends, name)
	}
	s.mu.Unlock()
	if err := ctxErr(ctx, "release"); err != nil {
		return err
	}
	if m, ok := s.recall(name, token); ok {
		if done, err := s.releaseTaken(ctx, name, m, hold); done {
			return err
		}
	}
	gone := func() error { return s.notHeld(name, token) }
	return s.b.update(ctx, "release", s.b.LockLease(name), nil, gone, func(l *coordv1.Lease) (*coordv1.Lease, error) {
		t, err := s.b.term(l, name)
		if err != nil {
			return nil, err
		}
		if token == 0 || t.token != token || t.session != s.lease || t.hold > 0 {
			return nil, s.notHeld(name, token)
		}
		return s.b.released(ctx, l, hold, time.Now()), nil
	})
}

// releaseTaken writes the lock Lease name released, rebuilt from what
// the session remembers of it, in one update conditioned on the
// remembered resourceVersion: no read. It reports false, for Release to
// read the Lease and try again, if the Lease changed since (a fenced
// write; a take by another session after this one's term ended).
func (s *session) releaseTaken(ctx context.Context, name string, m taken, hold time.Duration) (bool, error) {
	l := s.fresher(name, m.token, s.rebuild(name, m, 0))
	_, err := s.b.leases.Update(ctx, s.b.released(ctx, l, hold, time.Now()), metav1.UpdateOptions{})
	switch {
	case apierrors.IsConflict(err):
		return false, nil
	case apierrors.IsNotFound(err):
		return true, s.notHeld(name, m.token)
	}
	return true, translate(ctx, "release", err)
}

// notHeld is Release's error for a lock the session does not hold under
// token; it also matches ErrSessionLost if the session is lost.
func (s *session) notHeld(name string, token events.Token) error {
	if s.expired(time.Now()) {
		return fmt.Errorf("%w: %q: %w", backends.ErrNotHeld, name, s.markLost())
	}
	return fmt.Errorf("%w: %q under token %d by this session of %s", backends.ErrNotHeld, name, token, s.id)
}
