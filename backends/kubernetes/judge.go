package kubernetes

import (
	"context"
	"sync"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// observer remembers, per record, what this process last saw of it and
// when it first saw that: expiry is judged the way client-go's
// leaderelection judges it, by this process's own clock since it saw the
// record change, never by the timestamps another node wrote. A record
// first seen now counts as just renewed. The zero value is ready.
type observer struct {
	mu     sync.Mutex
	m      map[string]*sight
	pruned time.Time
}

// sight is one record as last seen.
type sight struct {
	mark string    // a session's resourceVersion, a lock's term and phase
	at   time.Time // when this process first saw mark
	used time.Time // when a judgment last asked
}

// Forgetting a record only makes later judgments later (its clock
// starts again), so the map is pruned of records nobody asked about
// for forgetAfter once it holds more than pruneAbove.
const (
	pruneAbove  = 4096
	forgetAfter = 10 * time.Minute
)

// see records that key showed mark at the time of the call, which is
// after the write that made it (the answer or event came after it).
func (o *observer) see(key, mark string) {
	o.unchanged(key, mark, time.Now())
}

// unchanged returns for how long key has shown mark, up to at (the
// start of the read that showed it): 0 if mark is new, which is
// recorded as first seen now.
func (o *observer) unchanged(key, mark string, at time.Time) time.Duration {
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.m = map[string]*sight{}
	}
	s := o.m[key]
	if s == nil || s.mark != mark {
		o.prune(now)
		o.m[key] = &sight{mark: mark, at: now, used: now}
		return 0
	}
	s.used = now
	return max(at.Sub(s.at), 0)
}

// forget drops key, whose record is gone.
func (o *observer) forget(key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.m, key)
}

func (o *observer) prune(now time.Time) {
	if len(o.m) < pruneAbove || now.Sub(o.pruned) < time.Minute {
		return
	}
	o.pruned = now
	for k, s := range o.m {
		if now.Sub(s.used) > forgetAfter {
			delete(o.m, k)
		}
	}
}

// lockKey and sessionKey name records in the observer.
func lockKey(name string) string     { return "lock/" + name }
func sessionKey(lease string) string { return "session/" + lease }

// live judges whether the term t of a lock Lease, read by a request
// that started at start, still holds: its hold has not ended, nor its
// lease, and its session lives. own is the session asking, if any: it
// judges itself by its own deadline. Another session lives without a
// request while the Backend's watch saw it renewed within its TTL (a
// watch that runs behind can only make it live longer: an ErrHeld that
// the watch's next signal corrects, never a grant); otherwise judging it
// costs one GET of its Lease, and a session found expired is deleted
// (see reap) before it counts as gone.
func (b *Backend) live(ctx context.Context, t term, start time.Time, own *session) (bool, error) {
	switch {
	case t.token == 0:
		return false, nil
	case t.hold > 0:
		return b.seen.unchanged(lockKey(t.name), t.mark(), start) < t.hold, nil
	case t.session == "":
		return false, nil
	case own != nil && t.session == own.lease:
		if own.expired(start) {
			return false, nil
		}
		if end, ok := own.leaseEnd(t.name, t.token); ok {
			return start.Before(end), nil
		}
	}
	if t.lease > 0 && b.seen.unchanged(lockKey(t.name), t.mark(), start) >= t.lease {
		return false, nil
	}
	if own != nil && t.session == own.lease {
		return true, nil
	}
	if b.hub.renewing(t.session, start) {
		return true, nil
	}
	at := time.Now()
	l, err := b.leases.Get(ctx, t.session, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		b.seen.forget(sessionKey(t.session))
		return false, nil
	case err != nil:
		return false, translate(ctx, "read session", err)
	}
	if b.sessionLive(l, at) {
		return true, nil
	}
	gone, err := b.reap(ctx, l)
	return !gone, err
}

// sessionLive judges a session Lease read by a request that started at
// at: it lives until it has shown the same resourceVersion for its TTL.
func (b *Backend) sessionLive(l *coordv1.Lease, at time.Time) bool {
	return b.seen.unchanged(sessionKey(l.Name), l.ResourceVersion, at) < ttlOf(l)
}

// ttlOf returns a session Lease's TTL: its annotation, or else its
// leaseDurationSeconds.
func ttlOf(l *coordv1.Lease) time.Duration {
	if ttl := msOf(l.Annotations, annTTLMS); ttl > 0 {
		return ttl
	}
	if l.Spec.LeaseDurationSeconds != nil {
		return time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	return 0
}

// reap deletes a session Lease judged expired, conditioned on the
// resourceVersion judged, and reports whether it is gone. Its locks are
// taken only once it is: a renewal that was on its way when the
// judgment was made either landed first (the delete is refused, and the
// session lives on) or is refused itself (the owner finds its session
// lost), so an owner never renews a session whose locks were taken.
func (b *Backend) reap(ctx context.Context, l *coordv1.Lease) (bool, error) {
	uid, rv := types.UID(l.UID), l.ResourceVersion
	err := b.leases.Delete(ctx, l.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}})
	switch {
	case err == nil || apierrors.IsNotFound(err):
		b.seen.forget(sessionKey(l.Name))
		return true, nil
	case apierrors.IsConflict(err):
		return false, nil // renewed after all
	}
	return false, translate(ctx, "delete expired session", err)
}
