package campaign_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/validate"
)

func TestNewRejectsBadInput(t *testing.T) {
	b := memory.New()
	tests := []struct {
		name string
		b    *memory.Backend
		lock string
		opts []campaign.Option
		want string
	}{
		{"nil backend", nil, "x", nil, "nil backend"},
		{"empty name", b, "", nil, "empty lock name"},
		{"control character", b, "a\nb", nil, "control character"},
		{"negative TTL", b, "x", []campaign.Option{campaign.WithTTL(-time.Second)}, "TTL"},
		{"margin leaving no room to renew", b, "x", []campaign.Option{campaign.WithTTL(time.Second), campaign.WithSafetyMargin(700 * time.Millisecond)}, "no room to renew"},
		{"margin not under TTL", b, "x", []campaign.Option{campaign.WithTTL(time.Second), campaign.WithSafetyMargin(time.Second)}, "safety margin"},
		{"negative retry", b, "x", []campaign.Option{campaign.WithRetry(-1)}, "retry"},
		{"negative grace", b, "x", []campaign.Option{campaign.WithGrace(-1)}, "grace"},
		{"zero TTL", b, "x", []campaign.Option{campaign.WithTTL(0)}, "TTL 0s must be from 1ms"},
		{"TTL under a millisecond", b, "x", []campaign.Option{campaign.WithTTL(time.Microsecond)}, "TTL 1µs must be from 1ms"},
		{"TTL over MaxTTL", b, "x", []campaign.Option{campaign.WithTTL(validate.MaxTTL + 1)}, "to 7 days"},
		{"TTL too short to hold", b, "x", []campaign.Option{campaign.WithTTL(time.Millisecond)}, "the shortest that works is 100ms"},
		{"TTL overflowing milliseconds", b, "x", []campaign.Option{campaign.WithTTL(math.MaxInt64)}, "TTL 2562047h47m16.854775807s"},
		{"zero retry", b, "x", []campaign.Option{campaign.WithRetry(0)}, "retry 0s"},
		{"oversized name", b, strings.Repeat("n", validate.MaxNameLen+1), nil, "longer than"},
		{"invalid UTF-8 name", b, "a\xffb", nil, "UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c *campaign.Campaign
			var err error
			if tt.b == nil {
				c, err = campaign.New(nil, tt.lock, tt.opts...)
			} else {
				c, err = campaign.New(tt.b, tt.lock, tt.opts...)
			}
			if !errors.Is(err, campaign.ErrInvalid) || !strings.Contains(err.Error(), tt.want) || c != nil {
				t.Fatalf("New = %v, %v; want ErrInvalid mentioning %q", c, err, tt.want)
			}
			if n := strings.Count(err.Error(), "invalid"); n != 1 {
				t.Errorf("%q says invalid %d times: one prefix, please", err, n)
			}
		})
	}
}

func TestCloseBeforeRun(t *testing.T) {
	c, err := campaign.New(memory.New(), "x")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, ok := <-c.Events(); ok {
		t.Fatal("events channel open after Close before Run")
	}
	if err := c.Run(t.Context()); !errors.Is(err, campaign.ErrClosed) {
		t.Fatalf("Run after Close = %v, want ErrClosed", err)
	}
}

func TestCloseDuringRunEndsTheTerm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		a := start(t, b, "a")
		won := next(t, a.c.Events())
		if err := a.c.Run(t.Context()); !errors.Is(err, campaign.ErrInvalid) {
			t.Fatalf("second Run = %v, want ErrInvalid", err)
		}
		if err := a.stop(t); !errors.Is(err, campaign.ErrClosed) {
			t.Fatalf("Run returned %v, want ErrClosed", err)
		}
		e := next(t, a.c.Events())
		if e.Kind != events.Revoked || e.Token != won.Token || !errors.Is(e.Reason, events.ErrResigned) {
			t.Fatalf("last event %s, want revoked(%d) resigned", e, won.Token)
		}
		if _, ok := <-a.c.Events(); ok {
			t.Fatal("events channel open after Run returned")
		}
		if h := holderOf(t, b, "lock"); h.ID != "" {
			t.Fatalf("lock still held by %+v after Close", h)
		}
		if err := a.c.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
		if err := a.c.Run(t.Context()); !errors.Is(err, campaign.ErrClosed) {
			t.Fatalf("Run after it ended = %v, want ErrClosed", err)
		}
	})
}

func TestRunWithCancelledContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, err := campaign.New(memory.New(), "x")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if err := c.Run(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("Run = %v, want context.Canceled", err)
		}
		for e := range c.Events() {
			t.Fatalf("event %s from a campaign that never ran", e)
		}
	})
}

// Run after a Run that ended with its context returns ErrClosed.
func TestRunAfterEndedRunIsClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCampaign(t, memory.New(), "x")
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if err := c.Run(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("Run = %v, want context.Canceled", err)
		}
		if err := c.Run(t.Context()); !errors.Is(err, campaign.ErrClosed) {
			t.Errorf("second Run after the first ended = %v, want ErrClosed", err)
		}
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
}

// A margin that puts the deadline (TTL less the margin) at or before the
// next renewal (a third of the TTL) could never renew a term in time: New
// rejects it.
func TestMarginMustLeaveRoomToRenew(t *testing.T) {
	if _, err := campaign.New(memory.New(), "x", campaign.WithSafetyMargin(7*time.Second)); !errors.Is(err, campaign.ErrInvalid) {
		t.Fatalf("margin 7s with TTL 10s (renewed every 3.3s): err = %v, want ErrInvalid", err)
	}
}

func TestCancelEndsTheTermWithReason(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		c, err := campaign.New(b, "x", campaign.WithID("a"))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- c.Run(ctx) }()
		won := next(t, c.Events())
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("Run = %v, want context.Canceled", err)
		}
		e := next(t, c.Events())
		if e.Kind != events.Revoked || e.Token != won.Token || !errors.Is(e.Reason, events.ErrResigned) || !errors.Is(e.Reason, context.Canceled) {
			t.Fatalf("got %s, want revoked for a cancelled context", e)
		}
		if h := holderOf(t, b, "x"); h.ID != "" {
			t.Fatalf("lock still held by %+v after cancel", h)
		}
	})
}

func TestResignWithoutTermIsANoOp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		c, err := campaign.New(b, "x")
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Resign(t.Context()); err != nil {
			t.Fatalf("Resign before Run = %v", err)
		}
		holder := start(t, b, "holder")
		next(t, holder.c.Events())
		waiter := start(t, b, "waiter")
		synctest.Wait()
		if err := waiter.c.Resign(t.Context()); err != nil {
			t.Fatalf("Resign while not leading = %v", err)
		}
		if !holder.c.State().Leader {
			t.Fatal("a waiter's Resign changed the leader")
		}
		waiter.stop(t)
		holder.stop(t)
		closeOK(t, c)
	})
}

func TestResignedLeaderLetsOthersWin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		a := start(t, b, "a")
		next(t, a.c.Events())
		z := start(t, b, "z")
		synctest.Wait()
		for range 5 {
			leader := a
			if z.c.State().Leader {
				leader = z
			}
			if err := leader.c.Resign(t.Context()); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
			if leader.c.State().Leader {
				t.Fatalf("%s won again right after resigning", leader.c.State().ID)
			}
			time.Sleep(5 * time.Second)
		}
		a.stop(t)
		z.stop(t)
	})
}

func TestSubscribe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		a := start(t, b, "a")
		won := next(t, a.c.Events())
		late := a.c.Subscribe(t.Context())
		if e := next(t, late); e.Kind != events.Elected || e.Token != won.Token {
			t.Fatalf("late subscriber first got %s, want the current term", e)
		}
		ctx, cancel := context.WithCancel(t.Context())
		gone := a.c.Subscribe(ctx)
		next(t, gone)
		cancel()
		for range gone {
		}
		a.stop(t)
		if e := next(t, late); e.Kind != events.Revoked || e.Token != won.Token || !errors.Is(e.Reason, events.ErrResigned) {
			t.Fatalf("subscriber got %s at the end, want revoked(%d) resigned", e, won.Token)
		}
		if _, ok := <-late; ok {
			t.Fatal("subscription open after the campaign ended")
		}
		if _, ok := <-a.c.Subscribe(t.Context()); ok {
			t.Fatal("subscription to an ended campaign is open")
		}
	})
}
