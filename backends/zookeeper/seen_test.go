package zookeeper

import (
	"fmt"
	"testing"
	"time"
)

// TestSeenIsBounded: however many contended locks and live sessions a
// Backend judges, it remembers at most seenMax of each, the latest among
// them.
func TestSeenIsBounded(t *testing.T) {
	var s seen
	var clock serverClock
	clock.sample(0, time.Now()) // behind every deadline below: each session is alive
	alive := seenSession{mtime: time.Now().UnixMilli(), data: sessionData{TTL: time.Hour.Milliseconds()}}
	for i := range 3 * seenMax {
		sid := fmt.Sprintf("%016x", i)
		s.alive(fmt.Sprintf("/locks/%d", i), seenChild{name: sid + "-0000000000"}, sid, alive, &clock)
	}
	if len(s.holders) > seenMax || len(s.sessions) > seenMax {
		t.Fatalf("remembers %d holders and %d sessions, want at most %d of each", len(s.holders), len(s.sessions), seenMax)
	}
	last := fmt.Sprintf("%016x", 3*seenMax-1)
	if _, ok := s.child(fmt.Sprintf("/locks/%d", 3*seenMax-1), last+"-0000000000"); !ok {
		t.Fatal("forgot the holder judged last")
	}
	if _, ok := s.session(last); !ok {
		t.Fatal("forgot the session judged last")
	}
}
