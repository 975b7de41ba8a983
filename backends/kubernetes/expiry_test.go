package kubernetes_test

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/backendtest"
	"github.com/hustings/hustings/backends/kubernetes"
	"github.com/hustings/hustings/internal/testserver"
)

// TestExpiryIgnoresTimestamps: expiry is judged by the observer's own
// clock since it saw the holder's session Lease change, as client-go
// judges it, whatever renewTime says: a renewTime written by a clock
// an hour behind, or an hour ahead, is a renewal like any other change,
// and the session expires a TTL after it, not sooner and not later.
func TestExpiryIgnoresTimestamps(t *testing.T) {
	const ttl = 2 * time.Second
	for _, skew := range []time.Duration{-time.Hour, time.Hour} {
		t.Run(skew.String(), func(t *testing.T) {
			cs := client(t, nil)
			ns := namespace(t, cs)
			b := prefixed(t, cs, ns, "skew")
			observer := prefixed(t, cs, ns, "skew") // another process: no sight of a yet
			a := backendtest.Open(t, b, "a", ttl)
			tok, err := a.Acquire(t.Context(), "skewed", 0)
			if err != nil {
				t.Fatal(err)
			}
			// The holder's clock is off by skew: its renewal writes that.
			leases := cs.CoordinationV1().Leases(ns)
			l, err := leases.Get(t.Context(), kubernetes.SessionLease(a), metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now().Add(skew)}
			if _, err := leases.Update(t.Context(), l, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			changed := time.Now()
			h, err := observer.Holder(t.Context(), "skewed")
			if err != nil || h.ID != "a" || h.Token != tok {
				t.Fatalf("Holder just after the renewal = %+v, %v; want a under %d", h, err, tok)
			}
			// Kept as a sleep: it waits for nothing but real time, to ask
			// again mid-TTL, which is what is tested.
			time.Sleep(ttl / 2)
			h, err = observer.Holder(t.Context(), "skewed")
			if err != nil {
				t.Fatal(err)
			}
			// A slow request may have started a TTL after the renewal, when
			// "free" is right; only one within the TTL must see a.
			if after := time.Since(changed); h.ID != "a" && after < ttl {
				t.Fatalf("Holder %v after the renewal = %+v; want a within the TTL %v", after, h, ttl)
			}
			testserver.Eventually(t, "the observer judges the session expired", 20*time.Second, func() bool {
				h, err := observer.Holder(t.Context(), "skewed")
				if err != nil {
					t.Fatal(err)
				}
				return h.ID == ""
			})
			if after := time.Since(changed); after < ttl {
				t.Fatalf("judged expired %v after the renewal, before the TTL %v", after, ttl)
			}
		})
	}
}

// TestLateRenewalKeepsLocks: a renewal that lands after another process
// judged the session expired, but before it deleted the session Lease,
// wins: the delete is refused, and the lock stays with its holder. Taking
// the lock without that delete would leave the holder renewed, and
// believing it leads, beside the new holder.
func TestLateRenewalKeepsLocks(t *testing.T) {
	const ttl = time.Second
	var calls methodCount
	cs, plain := client(t, &calls), client(t, nil)
	ns := namespace(t, cs)
	holder := prefixed(t, plain, ns, "late")
	observer := prefixed(t, cs, ns, "late")
	a := backendtest.Open(t, holder, "a", ttl)
	tok, err := a.Acquire(t.Context(), "late", 0)
	if err != nil {
		t.Fatal(err)
	}
	if h, err := observer.Holder(t.Context(), "late"); err != nil || h.ID != "a" {
		t.Fatalf("Holder = %+v, %v; want a", h, err)
	}
	// Kept as a sleep: the observer judges a's session on its own clock,
	// a TTL after it first saw the session's record, and nothing on the
	// server marks that moment; asking it (Holder) would reap the session
	// before the late renewal this test needs.
	time.Sleep(ttl + ttl/10)

	leases := plain.CoordinationV1().Leases(ns)
	renew := func() { // a's renewal, sent before its deadline, lands now
		l, err := leases.Get(context.Background(), kubernetes.SessionLease(a), metav1.GetOptions{})
		if err == nil {
			l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
			_, err = leases.Update(context.Background(), l, metav1.UpdateOptions{})
		}
		if err != nil {
			t.Errorf("late renewal: %v", err)
		}
	}
	calls.beforeDelete.Store(&renew)
	b := backendtest.Open(t, observer, "b", ttl)
	_, err = b.Acquire(t.Context(), "late", 0)
	if !errors.Is(err, backends.ErrHeld) {
		t.Fatalf("Acquire after the late renewal: %v, want ErrHeld", err)
	}
	if calls.beforeDelete.Load() != nil {
		t.Fatal("the observer took no step to delete the expired session")
	}
	if h, err := observer.Holder(t.Context(), "late"); err != nil || h.ID != "a" || h.Token != tok {
		t.Fatalf("Holder after the late renewal = %+v, %v; want a under %d", h, err, tok)
	}
}
