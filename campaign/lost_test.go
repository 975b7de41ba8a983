package campaign_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/events"
)

// lossPaths are the two ways a campaign learns that its lock was deleted
// behind its back: pushed by the session (memory's sessions push
// losses, as etcd's do), within the same instant of the
// fake clock; or found by the next renewal, which confirms every lock
// (a wrapper hides the push, as on Redis), within a keep-alive interval.
var lossPaths = []struct {
	name   string
	wrap   func(*memory.Backend) backends.Backend
	within time.Duration
}{
	{"pushed", func(b *memory.Backend) backends.Backend { return b }, 0},
	{"renewal", func(b *memory.Backend) backends.Backend { return &calls{Backend: b} }, ttl / 3},
}

// TestDeletedLockRevokes: a lock deleted behind its leader's back (an
// operator, an eviction) ends the leader's term at once where the backend
// pushes the loss, at its next renewal otherwise; then one candidate, the
// waiter woken by the delete or the old leader, which campaigns on, takes
// the lock with a higher token. (Which one is a race: with the push, the
// old leader tries again as soon as the waiter is woken.)
func TestDeletedLockRevokes(t *testing.T) {
	for _, p := range lossPaths {
		t.Run(p.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem := memory.New()
				b := p.wrap(mem)
				a := start(t, b, "a")
				first := next(t, a.c.Events())
				w := start(t, b, "w")
				synctest.Wait() // w found the lock held and waits
				deleted := time.Now()
				mem.Delete("lock")
				r := next(t, a.c.Events())
				if r.Kind != events.Revoked || !errors.Is(r.Reason, events.ErrLockLost) {
					t.Fatalf("old leader: %s, want revoked, lock lost", r)
				}
				if late := r.Time.Sub(deleted); late > p.within {
					t.Fatalf("old leader revoked %v after the delete, want within %v", late, p.within)
				}
				var won events.Event // the next term, the waiter's or the old leader's
				select {
				case won = <-w.c.Events():
				case won = <-a.c.Events():
				case <-time.After(time.Minute):
					t.Fatal("nobody elected within a minute of the loss")
				}
				synctest.Wait()
				leading := 0
				for _, n := range []*node{a, w} {
					if n.c.State().Leader {
						leading++
					}
				}
				if won.Kind != events.Elected || won.Token <= first.Token || leading != 1 {
					t.Fatalf("after the loss: %s and %d leaders; want one elected, with a token above %d", won, leading, first.Token)
				}
				if s := a.c.State(); s.Err != nil {
					t.Fatalf("old leader's state after the loss: %+v", s)
				}
				a.stop(t)
				w.stop(t)
			})
		})
	}
}

// TestDeletedLockRevokesOnSharedSession: the same on a shared session:
// only the deleted lock's campaign is revoked, and it takes its lock again
// with a higher token.
func TestDeletedLockRevokesOnSharedSession(t *testing.T) {
	for _, p := range lossPaths {
		t.Run(p.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem := memory.New()
				_, nodes, stop := shared(t, p.wrap(mem), "a", 3)
				first := map[string]events.Event{}
				for _, nd := range nodes {
					first[nd.c.State().Name] = next(t, nd.c.Events())
				}
				victim := nodes[1]
				deleted := time.Now()
				mem.Delete(victim.c.State().Name)
				r := next(t, victim.c.Events())
				if r.Kind != events.Revoked || !errors.Is(r.Reason, events.ErrLockLost) {
					t.Fatalf("%s: %s, want revoked, lock lost", victim.c.State().Name, r)
				}
				if late := r.Time.Sub(deleted); late > p.within {
					t.Fatalf("revoked %v after the delete, want within %v", late, p.within)
				}
				again := next(t, victim.c.Events())
				if again.Kind != events.Elected || again.Token <= first[victim.c.State().Name].Token {
					t.Fatalf("%s: %s, want elected again with a higher token", victim.c.State().Name, again)
				}
				for _, nd := range []*node{nodes[0], nodes[2]} {
					if s := nd.c.State(); !s.Leader || s.Token != first[nd.c.State().Name].Token {
						t.Fatalf("%s lost its term with another's lock: %+v", nd.c.State().Name, s)
					}
				}
				stop()
			})
		})
	}
}
