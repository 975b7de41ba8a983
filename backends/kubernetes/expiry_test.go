package kubernetes_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hustings/hustings/backends/kubernetes"
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
			a := open(t, b, "a", ttl)
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
			time.Sleep(ttl / 2)
			if h, err := observer.Holder(t.Context(), "skewed"); err != nil || h.ID != "a" {
				t.Fatalf("Holder half a TTL after the renewal = %+v, %v; want a", h, err)
			}
			waitUntil(t, "the observer judges the session expired", func() bool {
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
