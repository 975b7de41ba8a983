package kubernetes

import (
	"context"
	"strconv"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hustings/hustings/backends/internal/hub"
	"github.com/hustings/hustings/events"
)

// handover returns l released without a hold: named for the oldest
// waiter of its line whose session this process judges live (see
// waiting), under the token of l's resourceVersion (the version the
// update that writes it is conditioned on), or free if there is none.
// The waiters judged dead before it leave the line in the same update;
// those after it stay. A waiter that cannot be judged (its session
// Lease could not be read) ends the search: the lock is freed, and the
// line kept from it on.
func (b *Backend) handover(ctx context.Context, l *coordv1.Lease, now time.Time) *coordv1.Lease {
	line := without(lineOf(l), l.Labels[labelSession])
	for i, w := range line {
		live, err := b.waiting(ctx, w.Session, now)
		if err != nil {
			next := free(l, now)
			setLine(next, line[i:])
			return next
		}
		if live {
			return b.named(l, w, line[i+1:], now)
		}
	}
	next := free(l, now)
	setLine(next, nil)
	return next
}

// named returns l taken for the waiter w by the releasing update: as
// take writes it for w's session, under the token of l's
// resourceVersion, with rest as the line.
func (b *Backend) named(l *coordv1.Lease, w waiter, rest []waiter, now time.Time) *coordv1.Lease {
	next := l.DeepCopy()
	transitions := int32(0)
	if l.Spec.LeaseTransitions != nil {
		transitions = *l.Spec.LeaseTransitions
	}
	if prev := l.Spec.HolderIdentity; prev != nil && *prev != w.ID {
		transitions++
	}
	id := w.ID
	next.Spec = coordv1.LeaseSpec{
		HolderIdentity:       &id,
		LeaseDurationSeconds: seconds(time.Duration(w.TTL) * time.Millisecond),
		AcquireTime:          micro(now),
		RenewTime:            micro(now),
		LeaseTransitions:     &transitions,
	}
	if next.Labels == nil {
		next.Labels = map[string]string{}
	}
	next.Labels[labelSession] = w.Session
	next.Annotations[annToken] = l.ResourceVersion
	delete(next.Annotations, annHoldMS)
	delete(next.Annotations, annLeaseMS)
	setLine(next, rest)
	return next
}

// waiting judges a waiter's session Lease as a holder's is judged (see
// Backend.live): live while the Backend's watch saw it renewed within
// its TTL, else by one GET of it, on this process's clock since it first
// saw that version; gone if it does not exist. It deletes nothing.
func (b *Backend) waiting(ctx context.Context, lease string, at time.Time) (bool, error) {
	if b.hub.renewing(lease, at) {
		return true, nil
	}
	l, err := b.leases.Get(ctx, lease, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, translate(ctx, "read a waiter's session", err)
	}
	return b.sessionLive(l, at), nil
}

// lineSeen is what a Backend's watch last saw of the line of a lock that
// a listening session of it holds: the Lease's resourceVersion and the
// line as recorded, under the holder's token. A Release that finds it
// newer than what the session remembers writes from it, so that a
// waiter joining the line costs the holder's Release no conflict and no
// read.
type lineSeen struct {
	token events.Token
	rv    events.Token
	raw   string
}

// sawLine records the line of a lock Lease at rv if a listening session
// holds it, or forgets it. The hub's lock is held.
func (f *feed) sawLine(name string, t term, l *coordv1.Lease, rv events.Token, held bool) {
	raw := l.Annotations[annWaiters]
	if _, ok := f.lines[name]; !held || t.token == 0 || t.hold > 0 || !ok && raw == "" || !plain(l) {
		delete(f.lines, name) // kept from the first waiter on: a lock no one waits for costs nothing
		return
	}
	f.lines[name] = lineSeen{token: t.token, rv: rv, raw: raw}
}

// plain reports whether l carries nothing but what a take and a line
// write it, which a session can rebuild (see taken): a release written
// from a rebuilt Lease at a later resourceVersion must not drop what a
// fenced write or a person added.
func plain(l *coordv1.Lease) bool {
	for k := range l.Annotations {
		switch k {
		case annName, annToken, annLeaseMS, annWaiters:
		default:
			return false
		}
	}
	for k := range l.Labels {
		switch k {
		case labelManagedBy, labelPrefix, labelKind, labelSession:
		default:
			return false
		}
	}
	sp := l.Spec
	return len(l.OwnerReferences) == 0 && len(l.Finalizers) == 0 && sp.PreferredHolder == nil && sp.Strategy == nil
}

// line returns what the watch last saw of the line of the lock name held
// under token, if it saw one.
func (f *feed) line(name string, token events.Token) (ls lineSeen, ok bool) {
	f.current(func(hub.View[watched]) {
		ls, ok = f.lines[name]
		ok = ok && ls.token == token
	})
	return ls, ok
}

// fresher returns l, rebuilt from a memory of its take at rv, with the
// resourceVersion and line the watch saw since, if it saw a later one.
func (s *session) fresher(name string, token events.Token, l *coordv1.Lease) *coordv1.Lease {
	ls, ok := s.b.hub.line(name, token)
	if rv, err := tokenOf(l.ResourceVersion); !ok || err != nil || ls.rv <= rv {
		return l
	}
	l.ResourceVersion = strconv.FormatUint(uint64(ls.rv), 10)
	if ls.raw == "" {
		delete(l.Annotations, annWaiters)
	} else {
		l.Annotations[annWaiters] = ls.raw
	}
	return l
}
