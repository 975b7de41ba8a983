package httpapi

import (
	"testing"
	"time"

	"github.com/hustings/hustings/events"
)

// TestHistoryBounds: the history forgets events older than its window,
// keeps at most historyMax, and records an event repeated by a new
// subscription once.
func TestHistoryBounds(t *testing.T) {
	now := time.Now()
	hs := history{}
	hs.add(events.Event{Kind: events.Elected, Name: "old", Token: 1, Time: now.Add(-historyWindow - time.Second)})
	hs.add(events.Event{Kind: events.Elected, Name: "new", Token: 2, Time: now})
	hs.add(events.Event{Kind: events.Elected, Name: "new", Token: 2, Time: now}) // a new subscriber's first event
	if got := hs.recent(); len(got) != 1 || got[0].Name != "new" {
		t.Fatalf("recent = %v, want only the new election, once", got)
	}
	for i := range historyMax + 10 {
		hs.add(events.Event{Kind: events.Revoked, Name: "many", Token: events.Token(10 + i), Time: now})
	}
	got := hs.recent()
	if len(got) != historyMax || got[0].Token != 20 || got[len(got)-1].Token != events.Token(10+historyMax+9) {
		t.Fatalf("after %d more events: %d kept, tokens %d…%d; want the last %d", historyMax+10, len(got), got[0].Token, got[len(got)-1].Token, historyMax)
	}
}
