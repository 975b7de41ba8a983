package memory_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/strategy"
)

// TestExpireEndsTheSessionNow: Expire ends a candidate's session as its
// TTL running out would, long before it would: the holder hears of the
// loss at once, its waiters are woken and may take the lock under a
// larger token, its registry entry vanishes, and its next call is
// ErrSessionLost. Another candidate's session is untouched, and the
// expired candidate may open a new one.
func TestExpireEndsTheSessionNow(t *testing.T) {
	ctx := t.Context()
	b := memory.New()
	a, err := b.Open(ctx, "a", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c, err := b.Open(ctx, "c", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := a.Acquire(ctx, "lock", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Register(ctx, "g", strategy.Candidate{Score: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Acquire(ctx, "other", 0); err != nil {
		t.Fatal(err)
	}
	woken, err := b.Watch(ctx, "lock")
	if err != nil {
		t.Fatal(err)
	}

	b.Expire("a")

	select {
	case <-a.Losses():
	default:
		t.Fatal("Expire: the holder was not told of its loss")
	}
	if lost := a.Lost(); lost["lock"] != tok {
		t.Fatalf("Lost after Expire = %v, want lock under %d", lost, tok)
	}
	select {
	case <-woken:
	default:
		t.Fatal("Expire: the lock's watcher was not woken")
	}
	if h, err := b.Holder(ctx, "lock"); err != nil || h.ID != "" {
		t.Fatalf("Holder after Expire = %+v, %v; want free", h, err)
	}
	if m, err := b.Members(ctx, "g"); err != nil || len(m) != 0 {
		t.Fatalf("Members after Expire = %v, %v; want none", m, err)
	}
	if err := a.KeepAlive(ctx); !errors.Is(err, backends.ErrSessionLost) {
		t.Fatalf("KeepAlive after Expire = %v, want ErrSessionLost", err)
	}
	next, err := c.Acquire(ctx, "lock", 0)
	if err != nil || next <= tok {
		t.Fatalf("a waiter's Acquire after Expire = %d, %v; want a token above %d", next, err, tok)
	}
	if err := c.KeepAlive(ctx); err != nil {
		t.Fatalf("another candidate's KeepAlive after Expire = %v", err)
	}
	again, err := b.Open(ctx, "a", time.Hour)
	if err != nil {
		t.Fatalf("Open for the expired candidate = %v", err)
	}
	if err := again.KeepAlive(ctx); err != nil {
		t.Fatalf("the new session's KeepAlive = %v", err)
	}
	b.Expire("nobody") // no live session: nothing happens
	for _, s := range []backends.Session{again, c} {
		if err := s.Close(context.WithoutCancel(ctx)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestExpireKeepsAHold: a lock released with a hold is nobody's session's
// any more, so Expire leaves it held until the hold ends.
func TestExpireKeepsAHold(t *testing.T) {
	ctx := t.Context()
	b := memory.New()
	a, err := b.Open(ctx, "a", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := a.Acquire(ctx, "lock", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx, "lock", tok, time.Hour); err != nil {
		t.Fatal(err)
	}
	b.Expire("a")
	if h, err := b.Holder(ctx, "lock"); err != nil || h.ID != "a" || h.Token != tok {
		t.Fatalf("Holder of a hold after Expire = %+v, %v; want a under %d", h, err, tok)
	}
}
