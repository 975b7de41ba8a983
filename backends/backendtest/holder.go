package backendtest

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hustings/hustings/backends"
)

// clockSlack is how far a store's clock, and its rounding (etcd counts a
// lease's TTL in whole seconds), may put a Holder's Expires from the
// suite's reckoning: generous, for servers on this machine.
const clockSlack = 2 * time.Second

// holderDescribesTerm: what Holder says of a term besides its holder is
// consistent with it: Expires, if the store says it, lies within one TTL
// of the acquire and does not go back when the session is renewed; the
// Session, if the store names one, is shared by the locks of one session
// and not by those of another.
func holderDescribesTerm(e *env) {
	a, b := e.open("a"), e.open("b")
	first, second, other := e.name(), e.name(), e.name()
	start := time.Now()
	tok := e.acquire(a, first, 0)
	e.acquire(a, second, 0)
	e.acquire(b, other, 0)
	h := e.holder(first)
	if h.ID != "a" || h.Token != tok {
		e.t.Fatalf("Holder(%q) = %+v, want ID a, Token %d", first, h, tok)
	}
	if !h.Expires.IsZero() && e.h.Advance == nil {
		if lo, hi := start.Add(-clockSlack), time.Now().Add(e.h.TTL+clockSlack); h.Expires.Before(lo) || h.Expires.After(hi) {
			e.t.Fatalf("Holder(%q).Expires = %v, want within [%v, %v]: one TTL (%v) after the acquire", first, h.Expires, lo, hi, e.h.TTL)
		}
	}
	if hs, ho := e.holder(second), e.holder(other); h.Session != "" && (hs.Session != h.Session || ho.Session == h.Session) {
		e.t.Fatalf("Holder sessions: %q and %q of one session, %q of another; want the first two equal, the third not", h.Session, hs.Session, ho.Session)
	}
	e.wait(e.h.TTL / 3)
	e.keepAlive(a)
	renewed := e.holder(first)
	if !h.Expires.IsZero() && renewed.Expires.Before(h.Expires.Add(-time.Second)) {
		e.t.Fatalf("Holder(%q).Expires went back after KeepAlive: %v, then %v", first, h.Expires, renewed.Expires)
	}
	if e.h.Advance != nil && !h.Expires.IsZero() && !renewed.Expires.After(h.Expires) {
		e.t.Fatalf("Holder(%q).Expires = %v after KeepAlive %v later, want after %v", first, renewed.Expires, e.h.TTL/3, h.Expires)
	}
	if renewed.Session != h.Session {
		e.t.Fatalf("Holder(%q).Session changed with KeepAlive: %q, then %q", first, h.Session, renewed.Session)
	}
}

// holderOfHold: a lock released with a hold is held by no session, and
// ends within the hold.
func holderOfHold(e *env) {
	a := e.open("a")
	name := e.name()
	tok := e.acquire(a, name, 0)
	hold := e.h.TTL
	e.release(a, name, tok, hold)
	after := time.Now()
	h := e.holder(name)
	if h.ID != "a" || h.Token != tok || h.Session != "" {
		e.t.Fatalf("Holder(%q) during a hold = %+v, want ID a, Token %d, no Session", name, h, tok)
	}
	if !h.Expires.IsZero() && e.h.Advance == nil && h.Expires.After(after.Add(hold+clockSlack)) {
		e.t.Fatalf("Holder(%q).Expires = %v during a hold of %v released by %v, want no later than the hold's end", name, h.Expires, hold, after)
	}
}

// listFindsHeldLocks: List finds the held locks under a prefix, sorted,
// not a released one, nor a lock outside the prefix.
func listFindsHeldLocks(e *env) {
	a := e.open("a")
	first, released, third := e.name(), e.name(), e.name()
	prefix := strings.TrimSuffix(first, "1")
	e.acquire(a, third, 0)
	e.acquire(a, first, 0)
	e.release(a, released, e.acquire(a, released, 0), 0)
	got, err := e.b.List(e.ctx, prefix)
	if err != nil {
		e.t.Fatalf("List(%q): %v", prefix, err)
	}
	if want := []string{first, third}; !slices.Equal(got, want) {
		e.t.Fatalf("List(%q) = %q, want %q", prefix, got, want)
	}
	got, err = e.b.List(e.ctx, prefix+"none-")
	if err != nil || len(got) != 0 {
		e.t.Fatalf("List(%q) = %q, %v; want none", prefix+"none-", got, err)
	}
}

// canList reports whether b's store can list.
func canList(t *testing.T, b backends.Backend) bool {
	_, err := b.List(t.Context(), "backendtest-powers-")
	if err != nil && !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("backendtest: List to look at the backend's powers: %v", err)
	}
	return err == nil
}
