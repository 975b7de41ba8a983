package group_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/backendtest"
	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/elector"
)

// rollups are the lock names of the slots of the group these tests run
// (heldAndWaiting's), by slot.
var rollups = elector.SlotNames("rollups", 3)

// spy is a memory backend that logs what the sessions of one candidate
// ask for and which lines they leave. With gate non-nil its sessions say
// they queue their waiters (backends.Dequeuer), as ZooKeeper's do; their
// Dequeue waits at gate. See late for answers that come late.
type spy struct {
	*memory.Backend
	id   string
	gate chan struct{}

	mu          sync.Mutex
	asked, left []string
	late        string // the next Acquire of this name answers late (see answerLate)
	stalled     bool   // a late answer is on its way: keep-alives are applied but not answered
}

func (b *spy) Open(ctx context.Context, id string, ttl time.Duration) (backends.Session, error) {
	s, err := b.Backend.Open(ctx, id, ttl)
	if err != nil || id != b.id {
		return s, err
	}
	if b.gate != nil {
		return &queueingSpySession{spySession{Session: s, b: b}}, nil
	}
	return &spySession{Session: s, b: b}, nil
}

// log appends name to list under the lock.
func (b *spy) log(list *[]string, name string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	*list = append(*list, name)
}

// since returns the names of list from its n-th on.
func (b *spy) since(list *[]string, n int) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone((*list)[n:])
}

type spySession struct {
	backends.Session
	b *spy
}

func (s *spySession) Acquire(ctx context.Context, name string, lease time.Duration) (events.Token, error) {
	s.b.log(&s.b.asked, name)
	tok, err := s.Session.Acquire(ctx, name, lease)
	if s.b.beginLate(name) {
		defer s.b.endLate()
		select {
		case <-time.After(lateBy):
		case <-ctx.Done():
			return 0, fmt.Errorf("%w: %w", backends.ErrUnavailable, ctx.Err())
		}
	}
	return tok, err
}

// KeepAlive renews the session; while a late answer is on its way the
// renewal is applied but its answer lost, so the campaign's deadline runs
// out while the server keeps the session.
func (s *spySession) KeepAlive(ctx context.Context) error {
	err := s.Session.KeepAlive(ctx)
	if err == nil && s.b.isStalled() {
		return fmt.Errorf("%w: the answer was lost", backends.ErrUnavailable)
	}
	return err
}

// lateBy is how late an answer of the late kind comes: more than the
// margin of a TTL of a minute after the last renewal the campaign heard
// of, less than the call's own bound (the TTL).
const lateBy = 55 * time.Second

// beginLate reports whether an Acquire of name is to answer late, and if
// so starts its stall (once: the next Acquire of name answers at once).
func (b *spy) beginLate(name string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if name != b.late {
		return false
	}
	b.late, b.stalled = "", true
	return true
}

// endLate ends the stall: keep-alives are answered again.
func (b *spy) endLate() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stalled = false
}

func (b *spy) isStalled() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stalled
}

// answerLate makes the next Acquire of name answer late: the server takes
// the lock at once, the answer comes lateBy later, and meanwhile every
// keep-alive is applied but unanswered.
func (b *spy) answerLate(name string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.late = name
}

type queueingSpySession struct{ spySession }

// Dequeue leaves name's line: memory keeps none, so it only lets go of
// the lock if the session holds it.
func (s *queueingSpySession) Dequeue(ctx context.Context, name string) error {
	select {
	case <-s.b.gate:
	case <-ctx.Done():
		return ctx.Err()
	}
	s.b.log(&s.b.left, name)
	tok, err := s.Session.Acquire(ctx, name, 0)
	if err != nil {
		return nil // held by another: not ours
	}
	return s.Session.Release(ctx, name, tok, 0)
}

// heldAndWaiting joins three holders to a group of 3 slots on b, waits
// until they hold all three, then joins the candidate "waiter" and lets it
// find every slot held. No campaign polls: a try after the first is woken
// by the watch.
func heldAndWaiting(t *testing.T, b backends.Backend) (holders []*member, waiter *member) {
	t.Helper()
	var h backendtest.History
	opts := []campaign.Option{campaign.WithRetry(time.Hour), campaign.WithTTL(time.Minute)}
	for i := range 3 {
		holders = append(holders, join(t, b, fmt.Sprintf("h%d", i), 3, &h, opts...))
	}
	synctest.Wait()
	if n := len(leaders(holders)); n != 3 {
		t.Fatalf("%d of 3 slots filled", n)
	}
	waiter = join(t, b, "waiter", 3, &h, opts...)
	synctest.Wait()
	return holders, waiter
}

// A waiter that found every slot held and is woken by the release of one
// asks for that slot alone: its first request is for the slot let go, not
// for the slots in its own order that are still held (a woken waiter that
// went through every slot put a write per held slot on etcd's raft log in
// each handover, and reached the free slot last).
func TestWokenWaiterAsksForTheReleasedSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &spy{Backend: memory.New(), id: "waiter"}
		holders, w := heldAndWaiting(t, b)
		if got := b.since(&b.asked, 0); len(got) < 3 {
			t.Fatalf("the waiter asked for %v, want each of the 3 held slots", got)
		}
		// Let go of a slot the waiter does not ask for first: it must ask
		// for that slot alone, and get it.
		first := b.since(&b.asked, 0)[0]
		i := slices.IndexFunc(holders, func(m *member) bool { return rollups[m.g.State().Slot] != first })
		name, asked := rollups[holders[i].g.State().Slot], len(b.since(&b.asked, 0))
		holders[i].stop(t)
		synctest.Wait()
		if got := b.since(&b.asked, asked); len(got) != 1 || got[0] != name {
			t.Fatalf("woken by the release of %s, the waiter asked for %v", name, got)
		}
		if s := w.g.State(); !s.Leader || rollups[s.Slot] != name {
			t.Fatalf("after the release of %s the waiter's state is %+v", name, s)
		}
		for _, m := range append(holders, w) {
			m.stop(t)
		}
	})
}

// A waiter in the lines of every slot that wins one is elected before it
// leaves the other lines: leaving them is a request each (a delete of its
// node on ZooKeeper) that does not come between the win and the Elected.
func TestElectedBeforeTheOtherLinesAreLeft(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &spy{Backend: memory.New(), id: "waiter", gate: make(chan struct{})}
		holders, w := heldAndWaiting(t, b)
		if w.g.State().Leader {
			t.Fatal("the waiter leads with every slot held")
		}
		holders[0].stop(t)
		synctest.Wait()
		s := w.g.State()
		if !s.Leader {
			t.Fatalf("the waiter is not elected while it leaves the other lines: %+v", s)
		}
		if got := b.since(&b.left, 0); len(got) != 0 {
			t.Fatalf("left %v before the gate opened", got)
		}
		close(b.gate)
		synctest.Wait()
		got := b.since(&b.left, 0)
		if len(got) != 2 || slices.Contains(got, rollups[s.Slot]) {
			t.Fatalf("elected to slot %d, the waiter left the lines of %v; want the other two", s.Slot, got)
		}
		if s2 := w.g.State(); !s2.Leader || s2.Token != s.Token {
			t.Fatalf("after leaving the other lines the waiter's state is %+v, was %+v", s2, s)
		}
		for _, m := range append(holders, w) {
			m.stop(t)
		}
	})
}
