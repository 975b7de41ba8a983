package kubernetes_test

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
)

// TestTokensIncreaseAcrossRecreation: the token of a lock strictly
// increases across holders and across the deletion and recreation of its
// Lease (released, or deleted behind the holder's back), although
// leaseTransitions starts again with each new Lease; and the Lease reads
// as client-go writes it: holderIdentity, the token, transitions.
func TestTokensIncreaseAcrossRecreation(t *testing.T) {
	cs := client(t, nil)
	ns := namespace(t, cs)
	b := newBackend(t, cs, ns)
	leases := cs.CoordinationV1().Leases(ns)
	sessions := map[string]backends.Session{}
	for _, id := range []string{"a", "b"} {
		s, err := b.Open(t.Context(), id, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close(t.Context()) })
		sessions[id] = s
	}
	name := "token/monotonic"
	var last events.Token
	for round := range 4 {
		// Three terms on one Lease: a, then b, then a again.
		for i, id := range []string{"a", "b", "a"} {
			s := sessions[id]
			tok, err := s.Acquire(t.Context(), name, 0)
			if err != nil {
				t.Fatalf("round %d: %s: Acquire: %v", round, id, err)
			}
			if tok <= last {
				t.Fatalf("round %d: %s got token %d after %d", round, id, tok, last)
			}
			last = tok
			l, err := leases.Get(t.Context(), b.LockLease(name), metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := *l.Spec.HolderIdentity; got != id {
				t.Fatalf("holderIdentity %q, want %q", got, id)
			}
			if got := l.Annotations["hustings.io/token"]; got != fmt.Sprint(uint64(tok)) {
				t.Fatalf("token annotation %q, want %d", got, tok)
			}
			// A new Lease starts at 0; each change of holder (a release
			// leaves "") counts one, as client-go counts it.
			if got := *l.Spec.LeaseTransitions; got != int32(i) {
				t.Fatalf("round %d, term %d: leaseTransitions %d, want %d", round, i, got, i)
			}
			if i < 2 || round%2 == 0 {
				if err := s.Release(t.Context(), name, tok, 0); err != nil {
					t.Fatal(err)
				}
			}
		}
		// The Lease goes: released by its last holder in even rounds,
		// deleted behind a's back in odd ones.
		if err := leases.Delete(t.Context(), b.LockLease(name), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}
