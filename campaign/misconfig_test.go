package campaign_test

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
)

// TestCallsAfterClose: a closed campaign answers every call with
// ErrClosed, not silence and not a panic.
func TestCallsAfterClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := start(t, memory.New(), "a")
		if e := next(t, n.c.Events()); e.Kind != events.Elected {
			t.Fatalf("first event %v", e)
		}
		if err := n.stop(t); !errors.Is(err, campaign.ErrClosed) {
			t.Fatalf("Run after Close returned %v, want ErrClosed", err)
		}
		if err := n.c.Run(t.Context()); !errors.Is(err, campaign.ErrClosed) {
			t.Errorf("Run after Close = %v, want ErrClosed", err)
		}
		if err := n.c.Resign(t.Context()); !errors.Is(err, campaign.ErrClosed) {
			t.Errorf("Resign after Close = %v, want ErrClosed", err)
		}
		if err := n.c.Close(); err != nil {
			t.Errorf("second Close = %v, want nil", err)
		}
		if _, _, _, ok := n.c.Term(0); ok {
			t.Error("Term after Close bound work to a term")
		}
	})
}

// TestDuplicateIDIsReported: two live candidates with one ID are a
// mistake the locks cannot show (the holder's ID is ambiguous); the one
// that keeps losing reports it after a few TTLs, and the leader is
// unharmed.
func TestDuplicateIDIsReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		first := start(t, b, "same")
		if e := next(t, first.c.Events()); e.Kind != events.Elected {
			t.Fatalf("first event %v", e)
		}
		second := start(t, b, "same")
		time.Sleep(4 * ttl)
		err := second.c.State().Err
		if !errors.Is(err, campaign.ErrInvalid) || !strings.Contains(err.Error(), "IDs must be unique") {
			t.Fatalf("the duplicate's State().Err = %v, want ErrInvalid about unique IDs", err)
		}
		if s := first.c.State(); !s.Leader {
			t.Fatalf("the leader lost its term: %+v", s)
		}
		first.stop(t)
		if e := next(t, second.c.Events()); e.Kind != events.Elected {
			t.Fatalf("the duplicate's event after the leader left: %v", e)
		}
		if err := second.c.State().Err; err != nil { // cleared before Elected is published
			t.Fatalf("State().Err = %v once it leads", err)
		}
		second.stop(t)
	})
}

// TestRestartWithSameIDIsNotReported: a restarted process with a fixed ID
// sees its old session's lock until it expires; that is not a duplicate.
func TestRestartWithSameIDIsNotReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		old, err := b.Open(t.Context(), "pod-0", ttl)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := old.Acquire(t.Context(), "lock", 0); err != nil {
			t.Fatal(err)
		}
		// The old process dies: nobody renews its session.
		n := start(t, b, "pod-0")
		if e := next(t, n.c.Events()); e.Kind != events.Elected {
			t.Fatalf("event %v", e)
		}
		if err := n.c.State().Err; err != nil {
			t.Fatalf("State().Err = %v after taking over from its own dead session", err)
		}
		n.stop(t)
	})
}
