package backendtest

import (
	"cmp"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hustings/hustings/events"
)

// History collects the events of many campaigns or group campaigns, for
// CheckTerms. Safe for concurrent use.
type History struct {
	mu     sync.Mutex
	events []events.Event
}

// Add records e. Events of one holder must be added in the order its
// channel delivered them.
func (h *History) Add(e events.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, e)
}

// Follow adds every event of ch until it closes.
func (h *History) Follow(ch <-chan events.Event) {
	for e := range ch {
		h.Add(e)
	}
}

// Events returns a copy of what was recorded.
func (h *History) Events() []events.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.events)
}

// Term is one holding of a slot, from its Elected to its Revoked: [From, To).
type Term struct {
	Holder   string
	Slot     int
	Token    events.Token
	From, To time.Time
}

// Terms pairs each Elected with its Revoked, failing the test if a holder's
// events do not pair up, if a holder holds two slots at once, or if a term
// is left open.
func Terms(t testing.TB, log []events.Event) []Term {
	t.Helper()
	open := map[string]events.Event{} // by holder
	var out []Term
	for _, e := range log {
		switch e.Kind {
		case events.Elected:
			if o, ok := open[e.Holder]; ok {
				t.Fatalf("%s elected in slot %d while it holds slot %d", e.Holder, e.Slot, o.Slot)
			}
			open[e.Holder] = e
		case events.Revoked:
			o, ok := open[e.Holder]
			if !ok || o.Token != e.Token || o.Slot != e.Slot {
				t.Fatalf("revoked %s without its elected", e)
			}
			delete(open, e.Holder)
			out = append(out, Term{e.Holder, e.Slot, e.Token, o.Time, e.Time})
		}
	}
	if len(open) != 0 {
		t.Fatalf("terms left open: %v", open)
	}
	return out
}

// CheckTerms fails the test unless no two terms of one slot overlap in
// time, tokens per slot strictly increase in the order terms begin, and no
// more than n terms overlap at any instant. Events are stamped by their
// publishers' clocks, so all must share one clock (one process). It
// returns the terms.
func CheckTerms(t testing.TB, log []events.Event, n int) []Term {
	t.Helper()
	ts := Terms(t, log)
	slices.SortFunc(ts, func(x, y Term) int {
		return cmp.Or(cmp.Compare(x.Slot, y.Slot), x.From.Compare(y.From), cmp.Compare(x.Token, y.Token))
	})
	for i := 1; i < len(ts); i++ {
		p, c := ts[i-1], ts[i]
		if p.Slot == c.Slot && (c.From.Before(p.To) || c.Token <= p.Token) {
			t.Fatalf("slot %d: %s's term %d [%v, %v) then %s's term %d from %v", c.Slot, p.Holder, p.Token, p.From, p.To, c.Holder, c.Token, c.From)
		}
	}
	type edge struct {
		at    time.Time
		delta int
	}
	var edges []edge
	for _, x := range ts {
		edges = append(edges, edge{x.From, +1}, edge{x.To, -1})
	}
	slices.SortFunc(edges, func(x, y edge) int { return cmp.Or(x.at.Compare(y.at), cmp.Compare(x.delta, y.delta)) })
	held := 0
	for _, e := range edges {
		if held += e.delta; held > n {
			t.Fatalf("%d terms at once at %v, want at most %d", held, e.at, n)
		}
	}
	return ts
}
