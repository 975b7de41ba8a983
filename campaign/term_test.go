package campaign_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/events"
)

// TestTermContextCarriesTheDeadline: the term's context reports the term's
// local deadline, and a renewal moves it; a context derived from it with a
// later deadline of its own still ends with the term.
func TestTermContextCarriesTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		n := start(t, b, "a")
		e := next(t, n.c.Events())
		ctx, _, done, ok := n.c.Term(e.Token)
		if !ok {
			t.Fatal("no term in force after Elected")
		}
		defer done()
		if d, ok := ctx.Deadline(); !ok || !d.Equal(e.Deadline) {
			t.Fatalf("term ctx Deadline() = %v, %v; want the Elected event's %v", d, ok, e.Deadline)
		}
		time.Sleep(ttl) // a few renewals
		d, _ := ctx.Deadline()
		if s := n.c.State(); !d.After(e.Deadline) || !d.Equal(s.Deadline) {
			t.Fatalf("after renewals Deadline() = %v, want State().Deadline %v, later than %v", d, s.Deadline, e.Deadline)
		}
		child, cancel := context.WithTimeout(ctx, time.Hour)
		defer cancel()
		b.Partition("a")
		<-child.Done()
		if s := n.c.State(); s.Leader {
			t.Fatalf("a derived context ended while State still reports a term: %+v", s)
		}
		if got := time.Now(); got.After(d) {
			t.Fatalf("the derived context ended at %v, after the term's deadline %v", got, d)
		}
	})
}

// TestStateFollowsTheTermContext: once a term's context is cancelled,
// State never reports that term as in force.
func TestStateFollowsTheTermContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		n := start(t, b, "a")
		for range 5 {
			e := next(t, n.c.Events())
			if e.Kind != events.Elected {
				t.Fatalf("got %v, want elected", e)
			}
			ctx, _, done, ok := n.c.Term(e.Token)
			if !ok {
				t.Fatal("no term in force after Elected")
			}
			seen := make(chan bool, 1)
			go func() {
				<-ctx.Done()
				seen <- n.c.State().Leader
				done()
			}()
			if err := n.c.Resign(t.Context()); err != nil { // waits for done
				t.Fatal(err)
			}
			if <-seen {
				t.Fatal("State reported a term in force after its context was cancelled")
			}
			if r := next(t, n.c.Events()); r.Kind != events.Revoked {
				t.Fatalf("got %v, want revoked", r)
			}
		}
	})
}
