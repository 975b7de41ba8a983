package elector

import (
	"context"
	"fmt"
	"hash/fnv"
	"testing"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
)

// queueSess models a queueing backend (ZooKeeper): an Acquire that finds
// the lock held leaves the session in line.
type queueSess struct {
	backends.Session
	free  map[string]bool
	lines map[string]bool
}

func (s *queueSess) Acquire(_ context.Context, name string, _ time.Duration) (events.Token, error) {
	if s.free[name] {
		delete(s.lines, name)
		return 1, nil
	}
	s.lines[name] = true
	return 0, fmt.Errorf("%w: %s", backends.ErrHeld, name)
}
func (s *queueSess) Dequeue(_ context.Context, name string) error { delete(s.lines, name); return nil }

// L1: round 1 finds every slot held and joins every line; round 2 wins
// the first slot it tries (tried = 0) and leaves no line: the session
// stays queued on the other slots and will later hold a second slot that
// its campaign knows nothing of.
func TestLinesOfEarlierRoundsAreLeft(t *testing.T) {
	slots := SlotNames("g", 3)
	s := &queueSess{free: map[string]bool{}, lines: map[string]bool{}}
	if _, _, err := acquireAny(t.Context(), s, slots, "me"); err == nil {
		t.Fatal("round 1 should find all held")
	}
	h := fnv.New32a()
	h.Write([]byte("me"))
	first := int(h.Sum32() % uint32(len(slots))) // the slot acquireAny tries first
	s.free = map[string]bool{slots[first]: true}
	slot, _, err := acquireAny(t.Context(), s, slots, "me")
	if err != nil || slot != first {
		t.Fatalf("round 2: slot %d err %v", slot, err)
	}
	if len(s.lines) != 0 {
		t.Errorf("won slot %d but still queued on %v (from round 1): a second slot will come to this session unannounced", slot, s.lines)
	}
}
