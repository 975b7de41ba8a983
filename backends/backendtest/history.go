package backendtest

import (
	"slices"
	"sync"
	"testing"

	"github.com/hustings/hustings/chaos/history"
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

// CheckTerms fails the test unless the events pair up (each Elected is
// followed by exactly one Revoked of its term, and a holder holds one slot
// at a time), no two terms of one slot overlap in time, tokens per slot
// strictly increase in the order terms begin, and every slot is below n:
// the rules of package chaos/history, which does the checking. Events are
// stamped by their publishers' clocks, so all must share one clock (one
// process). It returns the terms.
func CheckTerms(t testing.TB, log []events.Event, n int) []history.Term {
	t.Helper()
	var h history.History
	for _, e := range log {
		kind := history.Elected
		switch e.Kind {
		case events.Elected:
		case events.Revoked:
			kind = history.Revoked
		default:
			continue
		}
		if e.Slot < 0 || e.Slot >= max(n, 1) {
			t.Fatalf("%s in slot %d of %d", e, e.Slot, n)
		}
		h.Events = append(h.Events, history.Event{Time: e.Time, Node: e.Holder, Key: history.Key{Name: e.Name, Slot: e.Slot}, Kind: kind, Token: e.Token})
	}
	r := history.Check(h, history.Config{})
	for _, v := range r.Violations {
		t.Errorf("%v", v)
	}
	if len(r.Violations) > 0 {
		t.FailNow()
	}
	return r.Terms
}
