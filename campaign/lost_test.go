package campaign_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/events"
)

// TestDeletedLockRevokes: a lock deleted behind its leader's back (an
// operator, an eviction) ends the leader's term at its next renewal, at
// most a keep-alive interval later, while a waiter woken by the delete
// takes the lock with a higher token; the old leader campaigns on.
func TestDeletedLockRevokes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		a := start(t, b, "a")
		first := next(t, a.c.Events())
		w := start(t, b, "w")
		synctest.Wait() // w found the lock held and waits
		deleted := time.Now()
		b.Delete("lock")
		won := next(t, w.c.Events())
		if won.Kind != events.Elected || won.Token <= first.Token {
			t.Fatalf("waiter: %s, want elected with a token above %d", won, first.Token)
		}
		r := next(t, a.c.Events())
		if r.Kind != events.Revoked || !errors.Is(r.Reason, events.ErrLockLost) {
			t.Fatalf("old leader: %s, want revoked, lock lost", r)
		}
		if late := r.Time.Sub(deleted); late > ttl/3 {
			t.Fatalf("old leader revoked %v after the delete, want within a keep-alive interval (%v)", late, ttl/3)
		}
		if s := a.c.State(); s.Leader || s.Err != nil {
			t.Fatalf("old leader's state after the loss: %+v", s)
		}
		if s := w.c.State(); !s.Leader || s.Token != won.Token {
			t.Fatalf("the new leader lost its term: %+v", s)
		}
		a.stop(t)
		w.stop(t)
	})
}

// TestDeletedLockRevokesOnSharedSession: the same on a shared session,
// whose one renewal confirms every lock: only the deleted lock's campaign
// is revoked, and it takes its lock again with a higher token.
func TestDeletedLockRevokesOnSharedSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		_, nodes, stop := shared(t, b, "a", 3)
		first := map[string]events.Event{}
		for _, nd := range nodes {
			first[nd.c.Name()] = next(t, nd.c.Events())
		}
		victim := nodes[1]
		deleted := time.Now()
		b.Delete(victim.c.Name())
		r := next(t, victim.c.Events())
		if r.Kind != events.Revoked || !errors.Is(r.Reason, events.ErrLockLost) {
			t.Fatalf("%s: %s, want revoked, lock lost", victim.c.Name(), r)
		}
		if late := r.Time.Sub(deleted); late > ttl/3 {
			t.Fatalf("revoked %v after the delete, want within a keep-alive interval (%v)", late, ttl/3)
		}
		again := next(t, victim.c.Events())
		if again.Kind != events.Elected || again.Token <= first[victim.c.Name()].Token {
			t.Fatalf("%s: %s, want elected again with a higher token", victim.c.Name(), again)
		}
		for _, nd := range []*node{nodes[0], nodes[2]} {
			if s := nd.c.State(); !s.Leader || s.Token != first[nd.c.Name()].Token {
				t.Fatalf("%s lost its term with another's lock: %+v", nd.c.Name(), s)
			}
		}
		stop()
	})
}
