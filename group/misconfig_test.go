package group_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/group"
	"github.com/hustings/hustings/strategy"
)

// TestDisagreeingSlotsAreReported: candidates of one group started with
// different N. The locks keep each slot to one holder, but the group has
// more leaders than the smaller N says; a candidate of the smaller N that
// keeps losing sees the extra slot held and reports it.
func TestDisagreeingSlotsAreReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		run := func(id string, n int) *campaign.Campaign {
			g, err := group.New(b, "g", n, campaign.WithID(id), campaign.WithTTL(10*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			wg.Go(func() { _ = g.Run(ctx) })
			return g
		}
		// a (2 slots), c and x (3 slots) fill all three slots; b (2 slots)
		// then loses on slots 0 and 1, and finds slot 2 held.
		a, c := run("a", 2), run("c", 3)
		elected := func(g *campaign.Campaign) events.Event {
			select {
			case e := <-g.Events():
				return e
			case <-time.After(time.Minute):
				t.Fatal("no election")
				return events.Event{}
			}
		}
		ea, ec := elected(a), elected(c)
		if ea.Slot == ec.Slot {
			t.Fatalf("a and c share slot %d", ea.Slot)
		}
		x := run("x", 3) // takes the slot of c's three that is left
		ex := elected(x)
		b2 := run("b", 2)
		time.Sleep(30 * time.Second)
		err := b2.State().Err
		held := map[int]bool{ea.Slot: true, ec.Slot: true, ex.Slot: true}
		if !held[2] {
			t.Fatalf("slots %v: nobody holds slot 2", held)
		}
		if !errors.Is(err, campaign.ErrInvalid) || !strings.Contains(err.Error(), "disagree on the number of slots") {
			t.Fatalf("b's State().Err = %v, want ErrInvalid about disagreeing slot counts", err)
		}
		cancel()
		wg.Wait()
	})
}

// TestGroupCallsAfterClose: a closed group answers with ErrClosed.
func TestGroupCallsAfterClose(t *testing.T) {
	g, err := group.New(memory.New(), "g", 2, group.WithStrategy(strategy.Score()), group.WithScore(1))
	if err != nil {
		t.Fatal(err)
	}
	closeOK(t, g)
	if err := g.Run(t.Context()); !errors.Is(err, campaign.ErrClosed) {
		t.Errorf("Run after Close = %v, want ErrClosed", err)
	}
	if err := g.Resign(t.Context()); !errors.Is(err, campaign.ErrClosed) {
		t.Errorf("Resign after Close = %v, want ErrClosed", err)
	}
	if err := g.SetScore(2); !errors.Is(err, campaign.ErrClosed) {
		t.Errorf("SetScore after Close = %v, want ErrClosed", err)
	}
}

// TestSetScoreWithoutStrategyIsRefused: a score is read by a group's
// strategy only; SetScore on a single lock or on a group without a
// strategy is ErrInvalid, not a change that nothing reads.
func TestSetScoreWithoutStrategyIsRefused(t *testing.T) {
	b := memory.New()
	c, err := campaign.New(b, "lock")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	g, err := group.New(b, "g", 2)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	for what, c := range map[string]*campaign.Campaign{"a single lock": c, "a group without a strategy": g} {
		if err := c.SetScore(2); !errors.Is(err, campaign.ErrInvalid) || !strings.Contains(err.Error(), "strategy") {
			t.Errorf("SetScore on %s = %v, want ErrInvalid naming the strategy", what, err)
		}
	}
}
