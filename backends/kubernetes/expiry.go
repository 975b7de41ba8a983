package kubernetes

import (
	"context"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/internal/hub"
)

// expiry returns the Holder of the live term t of lock Lease l, read at
// start, with when it ends unless renewed: a hold's renewTime + the hold
// (the releasing candidate's clock); for a session's lock, the end this
// process judges the session by while the Backend's watch delivers its
// Lease (the first sight of its current renewal + its TTL), else the
// session Lease's renewTime + its TTL (one GET; the holder's clock); the
// lock's acquireTime + its lease if that comes first.
func (b *Backend) expiry(ctx context.Context, l *coordv1.Lease, t term, start time.Time) (backends.Holder, error) {
	h := backends.Holder{ID: t.candidate, Token: t.token, Session: t.session}
	if t.hold > 0 {
		if r := l.Spec.RenewTime; r != nil {
			h.Expires = r.Add(t.hold)
		}
		return h, nil
	}
	if end, ok := b.hub.sessionEnd(t.session, start); ok {
		h.Expires = end
	} else {
		sl, err := b.leases.Get(ctx, t.session, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return backends.Holder{}, nil // it ended since the lock was judged
		case err != nil:
			return backends.Holder{}, translate(ctx, "read session", err)
		}
		if r := sl.Spec.RenewTime; r != nil && ttlOf(sl) > 0 {
			h.Expires = r.Add(ttlOf(sl))
		}
	}
	if a := l.Spec.AcquireTime; a != nil && t.lease > 0 {
		if end := a.Add(t.lease); h.Expires.IsZero() || end.Before(h.Expires) {
			h.Expires = end
		}
	}
	return h, nil
}

// sessionEnd returns the end of the session Lease named lease as
// renewing judges it, if the watch delivered it within its TTL before at.
func (f *feed) sessionEnd(lease string, at time.Time) (end time.Time, ok bool) {
	f.current(func(hub.View[watched]) {
		e, seen := f.sessions[lease]
		end, ok = e, seen && at.Before(e)
	})
	return end, ok
}
