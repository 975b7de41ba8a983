package elector

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
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
// the first slot it tries (tried = 0) and hands back the other lines as
// in doubt, for the caller to leave (disownAll): else the session stays
// queued on the other slots and will later hold a second slot that its
// campaign knows nothing of.
func TestLinesOfEarlierRoundsAreLeft(t *testing.T) {
	slots := SlotNames("g", 3)
	s := &queueSess{free: map[string]bool{}, lines: map[string]bool{}}
	_, _, doubt, err := acquireAny(t.Context(), s, slots, "me", nil, 0)
	if err == nil {
		t.Fatal("round 1 should find all held")
	}
	h := fnv.New32a()
	h.Write([]byte("me"))
	first := int(h.Sum32() % uint32(len(slots))) // the slot acquireAny tries first
	s.free = map[string]bool{slots[first]: true}
	slot, _, doubt, err := acquireAny(t.Context(), s, slots, "me", doubt, 0)
	if err != nil || slot != first || len(doubt) != 2 || slices.Contains(doubt, slots[first]) {
		t.Fatalf("round 2: slot %d, doubt %v, err %v; want slot %d, the two other lines in doubt", slot, doubt, err, first)
	}
	if left := disownAll(t.Context(), s, doubt); len(left) != 0 {
		t.Fatalf("could not leave %v", left)
	}
	if len(s.lines) != 0 {
		t.Errorf("won slot %d but still queued on %v (from round 1): a second slot will come to this session unannounced", slot, s.lines)
	}
}

// holdSess models a backend that does not queue: it records what the
// session holds.
type holdSess struct {
	backends.Session
	held     map[string]events.Token
	next     events.Token
	released []string
}

func (s *holdSess) Acquire(_ context.Context, name string, _ time.Duration) (events.Token, error) {
	if tok, ok := s.held[name]; ok {
		return tok, nil
	}
	s.next++
	s.held[name] = s.next
	return s.next, nil
}

func (s *holdSess) Release(_ context.Context, name string, tok events.Token, _ time.Duration) error {
	if s.held[name] != tok {
		return backends.ErrNotHeld
	}
	delete(s.held, name)
	s.released = append(s.released, name)
	return nil
}

// A slot whose acquire lost its answer is in doubt: the session may hold
// it. Winning another slot keeps it in doubt, and disowning it releases
// it, so a group campaign never keeps two; the slot won is kept.
func TestSlotInDoubtIsReleasedWhenAnotherIsWon(t *testing.T) {
	slots := SlotNames("g", 2)
	h := fnv.New32a()
	h.Write([]byte("me"))
	first := int(h.Sum32() % uint32(len(slots)))
	other := slots[1-first]
	s := &holdSess{held: map[string]events.Token{other: 7}} // the lost answer's lock
	slot, tok, doubt, err := acquireAny(t.Context(), s, slots, "me", []string{other}, 0)
	if err != nil || slot != first || len(doubt) != 1 || doubt[0] != other {
		t.Fatalf("acquireAny = slot %d, doubt %v, err %v; want slot %d, %s in doubt", slot, doubt, err, first, other)
	}
	if left := disownAll(t.Context(), s, doubt); len(left) != 0 {
		t.Fatalf("could not disown %v", left)
	}
	if _, ok := s.held[other]; ok || len(s.held) != 1 || s.held[slots[first]] != tok {
		t.Errorf("after winning %s the session holds %v, want only it (token %d)", slots[first], s.held, tok)
	}
}
