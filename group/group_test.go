package group_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/backendtest"
	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/group"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestNewRejectsFewerThanTwoSlots(t *testing.T) {
	for _, n := range []int{-1, 0, 1} {
		if _, err := group.New(memory.New(), "g", n); !errors.Is(err, campaign.ErrInvalid) {
			t.Errorf("New with %d slots: err = %v, want ErrInvalid", n, err)
		}
		if _, err := group.RunIfLeader(t.Context(), memory.New(), "g", n, answer); !errors.Is(err, campaign.ErrInvalid) {
			t.Errorf("RunIfLeader with %d slots: err = %v, want ErrInvalid", n, err)
		}
	}
	if _, err := group.New(memory.New(), "", 3); !errors.Is(err, campaign.ErrInvalid) {
		t.Errorf("New with an empty name: err = %v, want ErrInvalid", err)
	}
}

func answer(context.Context, events.Token) (int, error) { return 7, nil }

// member is one group candidate in the test bubble, with every event it
// published logged.
type member struct {
	g       *campaign.Campaign
	done    chan error
	stopped bool // Run's result was read; only the test goroutine sets it
}

func join(t *testing.T, b backends.Backend, id string, n int, h *backendtest.History, opts ...campaign.Option) *member {
	t.Helper()
	opts = append([]campaign.Option{campaign.WithID(id), campaign.WithTTL(10 * time.Second), campaign.WithRetry(500 * time.Millisecond)}, opts...)
	g := newGroup(t, b, n, opts...)
	go h.Follow(g.Events())
	return run(t, g)
}

// newGroup is group.New for "rollups" that fails the test on an error.
func newGroup(t *testing.T, b backends.Backend, n int, opts ...campaign.Option) *campaign.Campaign {
	t.Helper()
	g, err := group.New(b, "rollups", n, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// run runs g and returns it as a member; the test's end closes it.
func run(t *testing.T, g *campaign.Campaign) *member {
	m := &member{g: g, done: make(chan error, 1)}
	go func() { m.done <- g.Run(context.Background()) }()
	t.Cleanup(func() { closeOK(t, g) })
	return m
}

// stop closes the group and fails the test unless Run returns ErrClosed;
// calling it again only closes the group again.
func (m *member) stop(t *testing.T) {
	t.Helper()
	closeOK(t, m.g)
	if m.stopped {
		return
	}
	m.stopped = true
	if err := <-m.done; !errors.Is(err, campaign.ErrClosed) {
		t.Errorf("Run = %v, want ErrClosed", err)
	}
}

// closeOK closes c, failing the test on an error; safe to call from any
// goroutine.
func closeOK(t *testing.T, c io.Closer) {
	t.Helper()
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// leaders returns the members that lead now.
func leaders(ms []*member) []*member {
	var out []*member
	for _, m := range ms {
		if m.g.State().Leader {
			out = append(out, m)
		}
	}
	return out
}

func TestGroupFillsNSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		var h backendtest.History
		var ms []*member
		for i := range 8 {
			ms = append(ms, join(t, b, fmt.Sprintf("n%d", i), 3, &h))
		}
		synctest.Wait()
		ls := leaders(ms)
		if len(ls) != 3 {
			t.Fatalf("%d leaders, want 3", len(ls))
		}
		slotsHeld := map[int]string{}
		for _, m := range ls {
			s := m.g.State()
			if other, dup := slotsHeld[s.Slot]; dup {
				t.Fatalf("slot %d held by %s and %s", s.Slot, other, s.ID)
			}
			slotsHeld[s.Slot] = s.ID
			if hb, err := b.Holder(t.Context(), fmt.Sprintf("rollups/slot-%d", s.Slot)); err != nil || hb.ID != s.ID || hb.Token != s.Token {
				t.Fatalf("backend says slot %d is %+v (%v), %s believes it holds it with token %d", s.Slot, hb, err, s.ID, s.Token)
			}
		}
		// A resigned slot is refilled by a waiter woken by the release.
		began := time.Now()
		if err := ls[0].g.Resign(t.Context()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if n := len(leaders(ms)); n != 3 || time.Since(began) > 0 {
			t.Fatalf("%d leaders %v after a resignation, want 3 at once", n, time.Since(began))
		}
		for _, m := range ms {
			m.stop(t)
		}
	})
}

func TestGroupNeverMoreThanNUnderCrashes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		var h backendtest.History
		var ms []*member
		for i := range 8 {
			ms = append(ms, join(t, b, fmt.Sprintf("n%d", i), 3, &h))
		}
		crashed := map[string]bool{}
		for round := range 20 {
			time.Sleep(7 * time.Second)
			for id := range crashed {
				b.Heal(id)
				delete(crashed, id)
			}
			ls := leaders(ms)
			if round > 0 && len(ls) == 0 {
				t.Fatalf("round %d: no slot filled", round)
			}
			// Crash one leader, resign another.
			if len(ls) > 0 {
				id := ls[0].g.State().ID
				b.Partition(id)
				crashed[id] = true
			}
			if len(ls) > 1 {
				if err := ls[1].g.Resign(t.Context()); err != nil {
					t.Errorf("Resign: %v", err)
				}
			}
		}
		for id := range crashed {
			b.Heal(id)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if n := len(leaders(ms)); n != 3 {
			t.Fatalf("%d leaders after the faults stopped, want 3", n)
		}
		for _, m := range ms {
			m.stop(t)
		}
		synctest.Wait()
		if ts := backendtest.CheckTerms(t, h.Events(), 3); len(ts) < 20 {
			t.Fatalf("only %d terms: the test exercised too little", len(ts))
		}
	})
}

func TestGroupRunIfLeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		var h backendtest.History
		a, c := join(t, b, "a", 3, &h), join(t, b, "c", 3, &h)
		synctest.Wait()
		res, err := group.RunIfLeader(t.Context(), b, "rollups", 3, answer)
		if err != nil || res.Outcome != campaign.Succeeded || res.Value != 7 {
			t.Fatalf("one slot free: %+v, %v; want elected", res, err)
		}
		if res.Slot == a.g.State().Slot || res.Slot == c.g.State().Slot {
			t.Fatalf("ran in slot %d, which a or c holds", res.Slot)
		}
		d := join(t, b, "d", 3, &h)
		synctest.Wait()
		res, err = group.RunIfLeader(t.Context(), b, "rollups", 3, answer)
		if err != nil || res.Outcome != campaign.Skipped {
			t.Fatalf("all slots held: %+v, %v; want skipped", res, err)
		}
		for _, m := range []*member{a, c, d} {
			m.stop(t)
		}
	})
}

func TestGroupWhileLeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		ctx, cancel := context.WithCancel(t.Context())
		var mu sync.Mutex
		running := 0
		most := 0
		var wg sync.WaitGroup
		for i := range 5 {
			g, err := group.New(b, "pollers", 2, campaign.WithID(fmt.Sprint(i)))
			if err != nil {
				t.Fatal(err)
			}
			wg.Go(func() {
				err := campaign.WhileLeader(ctx, g, func(ctx context.Context, term events.Event) error {
					mu.Lock()
					running++
					most = max(most, running)
					mu.Unlock()
					time.Sleep(3 * time.Second)
					mu.Lock()
					running--
					mu.Unlock()
					return errors.New("hand over") // resign, so others get a turn
				})
				if !errors.Is(err, context.Canceled) {
					t.Errorf("WhileLeader = %v, want context.Canceled", err)
				}
			})
		}
		time.Sleep(time.Minute)
		cancel()
		wg.Wait()
		if most != 2 {
			t.Fatalf("at most %d ran at once, want exactly 2", most)
		}
	})
}
