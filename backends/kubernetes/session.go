package kubernetes

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/internal/hub"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/ledger"
	"github.com/hustings/hustings/internal/validate"
)

// session is one Open: a session Lease that KeepAlive renews, and the
// lock Leases that name it.
type session struct {
	b     *Backend
	id    string        // candidate ID
	lease string        // the session Lease's name, also the label on its locks
	ttl   time.Duration // as asked; the Lease says it in milliseconds

	mu          sync.Mutex
	closed      bool
	lost        bool                    // found lost: stays so
	listening   bool                    // Losses was called: the watch pushes losses
	confirmedOn *hub.Run                // the watch's run that has pushed losses since a LIST confirmed the locks
	rec         *coordv1.Lease          // the session Lease as last written
	renewed     time.Time               // start of the last successful Open or KeepAlive
	ends        map[string]leaseTerm    // locks granted with a lease, by name
	taken       map[string]taken        // locks granted, as last written or read, for Release
	line        map[string]events.Token // lines joined, by lock name: the resourceVersion the join left
	waiting     map[string]int          // the WatchInLine calls open, by lock name

	ledger ledger.Ledger // what Acquire granted, and what KeepAlive found gone
}

// leaseTerm is when a lock granted with a lease ends, by this process's
// clock (from the start of the Acquire that took it).
type leaseTerm struct {
	token events.Token
	end   time.Time
}

// Open starts a session for candidate id: it creates a session Lease
// (holderIdentity id, leaseDurationSeconds the TTL rounded up to whole
// seconds, the TTL itself in milliseconds in an annotation). One request.
func (b *Backend) Open(ctx context.Context, id string, ttl time.Duration) (backends.Session, error) {
	if err := validate.Session(id, ttl); err != nil {
		return nil, err
	}
	if err := ctxErr(ctx, "open"); err != nil {
		return nil, err
	}
	var r [12]byte
	_, _ = rand.Read(r[:]) // never fails
	s := &session{b: b, id: id, lease: b.prefix + "-session-" + hex.EncodeToString(r[:]), ttl: ttl}
	start := time.Now()
	rec := &coordv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: s.lease, Labels: b.labels(kindSession), Annotations: map[string]string{annTTLMS: ms(ttl)}},
		Spec: coordv1.LeaseSpec{
			HolderIdentity:       &s.id,
			LeaseDurationSeconds: seconds(ttl),
			AcquireTime:          micro(start),
			RenewTime:            micro(start),
			LeaseTransitions:     new(int32(0)),
		},
	}
	created, err := b.leases.Create(ctx, rec, metav1.CreateOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, b.missingNamespace("open", err)
	case err != nil:
		return nil, translate(ctx, "open", err)
	}
	b.seen.see(sessionKey(s.lease), created.ResourceVersion)
	s.rec, s.renewed = created, start
	return s, nil
}

// ID returns the candidate ID the session was opened for.
func (s *session) ID() string { return s.id }

// KeepAlive renews the session Lease with one update (renewTime, on the
// resourceVersion last written: a conflict re-reads it and tries once
// more) and confirms the session's locks: a lock granted but no longer
// named for the session under its token (deleted, taken over, rewritten
// by hand), or whose lease ended by this process's clock, goes to Lost.
//
// A session whose losses the Backend's watch pushes (Losses was called)
// confirms them by the watch: once the watch has delivered the renewal's
// own change of the session Lease, it has delivered every change before
// it, and any of them that took a lock from the session went to Lost
// already. That is one small write a tick, whatever the number of locks.
// Until the watch has served the session since a LIST confirmed its
// locks (its first KeepAlive, or after the watch broke), or if the watch
// has not delivered the renewal within a quarter of the TTL, KeepAlive
// confirms them with one LIST of the lock Leases labelled with the
// session, made beside the renewal: one write and one read. A session
// whose TTL has passed since the start of its last successful renewal,
// or whose Lease is gone, is lost: ErrSessionLost, for good.
func (s *session) KeepAlive(ctx context.Context) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := ctxErr(ctx, "keep-alive"); err != nil {
		return err
	}
	start := time.Now()
	if s.expired(start) {
		return s.markLost()
	}
	granted := s.ledger.Held()
	r := s.b.hub.listening(s) // taken before the LIST: what the LIST misses, r delivers
	s.mu.Lock()
	pushed := r != nil && s.confirmedOn == r
	s.mu.Unlock()
	var found map[string]events.Token
	if pushed {
		rv, err := s.renew(ctx, start)
		if err != nil {
			return err
		}
		if rv == 0 || !r.Reached(ctx, uint64(rv), s.ttl/4) {
			if found, err = s.locks(ctx); err != nil {
				return err
			}
		}
	} else {
		var (
			listErr error
			wg      sync.WaitGroup
		)
		wg.Go(func() { found, listErr = s.locks(ctx) })
		_, err := s.renew(ctx, start)
		wg.Wait()
		if err != nil {
			return err
		}
		if listErr != nil {
			return listErr
		}
	}
	for name, tok := range granted {
		if found != nil && found[name] != tok || s.leaseOver(name, tok, start) {
			s.ledger.Gone(name, tok)
			s.recall(name, tok) // its Release reads the Lease
		}
	}
	s.mu.Lock()
	s.confirmedOn = r
	s.mu.Unlock()
	s.relisten()
	return nil
}

// renew writes the session Lease's renewTime; a write refused on a stale
// resourceVersion (someone else wrote the Lease) re-reads it and is made
// once more. It returns the resourceVersion written (0 if it is not a
// number, or a later renewal was recorded meanwhile).
func (s *session) renew(ctx context.Context, start time.Time) (events.Token, error) {
	s.mu.Lock()
	rec := s.rec.DeepCopy()
	s.mu.Unlock()
	for try := 0; ; try++ {
		rec.Spec.RenewTime = micro(start)
		rec.Spec.HolderIdentity = &s.id
		updated, err := s.b.leases.Update(ctx, rec, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) && try == 0 {
			if rec, err = s.b.leases.Get(ctx, s.lease, metav1.GetOptions{}); err == nil {
				continue
			}
		}
		switch {
		case apierrors.IsNotFound(err):
			return 0, s.markLost()
		case err != nil:
			return 0, translate(ctx, "keep-alive", err)
		}
		s.b.seen.see(sessionKey(s.lease), updated.ResourceVersion)
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.lost || start.Before(s.renewed) {
			return 0, nil // a later renewal, or a loss, was recorded meanwhile
		}
		s.rec, s.renewed = updated, start
		rv, _ := tokenOf(updated.ResourceVersion)
		return rv, nil
	}
}

// locks lists the lock Leases that name the session, by lock name with
// the token each is held under (not those released with a hold).
func (s *session) locks(ctx context.Context) (map[string]events.Token, error) {
	list, err := s.b.leases.List(ctx, metav1.ListOptions{LabelSelector: s.selector(kindLock)})
	if err != nil {
		return nil, translate(ctx, "keep-alive: list locks", err)
	}
	out := make(map[string]events.Token, len(list.Items))
	for i := range list.Items {
		if t := termOf(&list.Items[i]); t.session == s.lease && t.hold == 0 {
			out[t.name] = t.token
		}
	}
	return out, nil
}

// selector selects the Leases of kind labelled with the session.
func (s *session) selector(kind string) string {
	set := s.b.labels(kind)
	delete(set, labelManagedBy)
	set[labelSession] = s.lease
	return labels.SelectorFromSet(set).String()
}

// Close hands over the locks that name the session as Release does
// (to the next live waiter of each, or free), deletes its registry
// entries (one LIST, then one write per Lease, eight at a time) and
// leaves the lines it is in (a GET and an update each, among the
// eight), then deletes the session Lease. The session is closed even if Close fails:
// what it did not reach is judged expired by the others after the TTL.
func (s *session) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.b.hub.unlisten(s)
	if err := ctxErr(ctx, "close"); err != nil {
		return err
	}
	list, err := s.b.leases.List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(map[string]string{
		labelPrefix: s.b.prefix, labelSession: s.lease}).String()})
	if err != nil {
		return translate(ctx, "close", err)
	}
	lines := s.lines()
	for i := range list.Items {
		delete(lines, list.Items[i].Annotations[annName]) // disposed of below
	}
	errs := make([]error, len(list.Items)+len(lines))
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i := range list.Items {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = s.dispose(ctx, &list.Items[i])
		})
	}
	for i, name := range slices.Sorted(maps.Keys(lines)) {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[len(list.Items)+i] = s.leave(ctx, name)
		})
	}
	wg.Wait()
	err = s.b.leases.Delete(ctx, s.lease, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return translate(ctx, "close", err)
	}
	s.b.seen.forget(sessionKey(s.lease))
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// dispose hands over a lock Lease of the session, or deletes a registry
// entry. A lock Lease changed since the LIST (a waiter joined its line)
// is read again, as Release does.
func (s *session) dispose(ctx context.Context, l *coordv1.Lease) error {
	if l.Labels[labelKind] == kindMember {
		if err := s.b.leases.Delete(ctx, l.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return translate(ctx, "close", err)
		}
		return nil
	}
	return s.b.update(ctx, "close", l.Name, l, func() error { return nil }, func(l *coordv1.Lease) (*coordv1.Lease, error) {
		if t := termOf(l); l.Labels[labelKind] != kindLock || t.session != s.lease || t.hold > 0 {
			return nil, nil // not the session's, or no longer
		}
		return s.b.handover(ctx, l, time.Now()), nil
	})
}

// Lost returns the locks KeepAlive found gone; see backends.Session.
func (s *session) Lost() map[string]events.Token { return s.ledger.Lost() }

// expired reports whether the TTL has passed since the start of the
// session's last successful renewal (or it was found lost): by this
// process's clock, before any observer's, whose clocks start later.
func (s *session) expired(now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lost || now.Sub(s.renewed) >= s.ttl
}

// leaseOver reports whether the lock name, granted under tok with a
// lease, has reached the end of its lease at now.
func (s *session) leaseOver(name string, tok events.Token, now time.Time) bool {
	end, ok := s.leaseEnd(name, tok)
	return ok && !now.Before(end)
}

// leaseEnd returns when the lock name granted under tok ends by its
// lease, if it was granted with one by this process.
func (s *session) leaseEnd(name string, tok events.Token) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	lt, ok := s.ends[name]
	return lt.end, ok && lt.token == tok
}

// usable returns an error matching backends.ErrSessionClosed once Close
// was called.
func (s *session) usable() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("kubernetes: session of %s: %w", s.id, backends.ErrSessionClosed)
	}
	return nil
}

// markLost records that the session is lost and returns the error saying
// so.
func (s *session) markLost() error {
	s.mu.Lock()
	s.lost = true
	s.mu.Unlock()
	return fmt.Errorf("kubernetes: session of %s (Lease %s): %w", s.id, s.lease, backends.ErrSessionLost)
}
