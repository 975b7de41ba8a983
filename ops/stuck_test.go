package ops

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/elector"
)

// A campaign revokes its term at the deadline by itself, so keep-alives
// failing for a TTL under a term in force are what a stuck process shows:
// this drives the hooks the way such a campaign's engine would.
func TestHealthFailsWhenKeepAlivesFailLongerThanTheTTLWhileLeading(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl = 10 * time.Second
		h, err := NewHealth(time.Hour) // the deadline check stays out of it
		if err != nil {
			t.Fatal(err)
		}
		// The hooks of three sessions' Configs, as the engine would make them.
		hook, follower, other := &healthHook{h: h}, &healthHook{h: h}, &healthHook{h: h}
		follower.KeepAlive("memory", 0, errors.New("timeout")) // a follower's: no term, never counts
		e := events.Event{Kind: events.Elected, Name: "job", Holder: "a", Token: 7, Time: time.Now(), Deadline: time.Now().Add(ttl)}
		term := hook.Term(context.Background(), e, "memory", ttl, elector.Hooks{hook}, func() time.Time { return e.Deadline })
		hook.KeepAlive("memory", 0, nil)
		other.KeepAlive("memory", 0, errors.New("timeout")) // another session's (a on another memory backend, say): not this term's
		time.Sleep(ttl / 2)
		hook.KeepAlive("memory", 0, errors.New("timeout"))
		time.Sleep(ttl / 2)
		hook.KeepAlive("memory", 0, errors.New("timeout")) // the first failure counts, not the last
		time.Sleep(ttl / 2)
		if err := h.Check(t.Context()); err != nil {
			t.Fatalf("failing for a TTL exactly: Check = %v, want nil", err)
		}
		time.Sleep(time.Millisecond)
		err = h.Check(t.Context())
		if !errors.Is(err, ErrUnhealthy) || !strings.Contains(err.Error(), "keep-alives of a on memory") {
			t.Fatalf("failing for over a TTL while leading: Check = %v, want ErrUnhealthy about a's keep-alives", err)
		}
		hook.KeepAlive("memory", 0, nil)
		if err := h.Check(t.Context()); err != nil {
			t.Fatalf("after a renewal: Check = %v, want nil", err)
		}
		hook.KeepAlive("memory", 0, errors.New("timeout"))
		term.Ended(events.Event{Kind: events.Revoked, Time: time.Now()})
		time.Sleep(2 * ttl)
		if err := h.Check(t.Context()); err != nil {
			t.Fatalf("failing while following: Check = %v, want nil", err)
		}
		if len(h.terms) != 0 {
			t.Errorf("%d terms kept after the last ended", len(h.terms))
		}
	})
}

// A term still in force past its deadline and the grace is a campaign
// whose timers did not run: the probe fails until the term ends; a
// renewal that moved the deadline keeps it passing.
func TestHealthFailsForATermBelievedPastItsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl, grace = 10 * time.Second, 2 * time.Second
		h, err := NewHealth(grace)
		if err != nil {
			t.Fatal(err)
		}
		e := events.Event{Kind: events.Elected, Name: "job", Slot: 1, Holder: "a", Token: 7, Time: time.Now(), Deadline: time.Now().Add(ttl)}
		deadline := e.Deadline
		term := (&healthHook{h: h}).Term(context.Background(), e, "memory", ttl, nil, func() time.Time { return deadline })
		time.Sleep(ttl / 2)
		deadline = time.Now().Add(ttl) // a renewal
		time.Sleep(ttl + grace)
		if err := h.Check(t.Context()); err != nil {
			t.Fatalf("at the renewed deadline + the grace: Check = %v, want nil", err)
		}
		time.Sleep(time.Millisecond)
		err = h.Check(t.Context())
		if !errors.Is(err, ErrUnhealthy) || !strings.Contains(err.Error(), `term 7 of "job" slot 1 is believed in force`) {
			t.Fatalf("past the deadline + the grace: Check = %v, want ErrUnhealthy about term 7", err)
		}
		term.Ended(events.Event{Kind: events.Revoked, Time: time.Now()})
		if err := h.Check(t.Context()); err != nil {
			t.Fatalf("once revoked: Check = %v, want nil", err)
		}
	})
}
