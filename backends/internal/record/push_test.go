package record_test

import (
	"context"
	"testing"
	"time"

	"github.com/hustings/hustings/backends/internal/record"
)

// TestCloseDuringLossesLeavesNoFeed: a session closed while its first
// Losses is joining the Store's feed does not keep the feed running once
// closed. Close is started between Losses' check that the session is
// open and its join: either it waits for the join, and leaves the feed
// after it, or (the race this holds) it ran whole before the join, and
// the join kept the feed for a closed session, for good.
func TestCloseDuringLossesLeavesNoFeed(t *testing.T) {
	s := newKVStore(t)
	ss, err := s.Open(t.Context(), "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	record.SetKeepHook(t, ss, func() {
		go func() { closed <- ss.Close(context.Background()) }()
		select {
		case err := <-closed: // Close overtook the join
			closed <- err
		case <-time.After(100 * time.Millisecond): // Close waits for the join
		}
	})
	ss.Losses()
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if record.FeedRuns(s.Store) {
		t.Fatal("the Store's feed runs after its only session closed: the closed session keeps it")
	}
}
