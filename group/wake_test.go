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
)

// asks is a memory backend that logs the names the sessions of one
// candidate ask for.
type asks struct {
	*memory.Backend
	id string

	mu    sync.Mutex
	names []string
}

func (a *asks) Open(ctx context.Context, id string, ttl time.Duration) (backends.Session, error) {
	s, err := a.Backend.Open(ctx, id, ttl)
	if err != nil || id != a.id {
		return s, err
	}
	return &asksSession{Session: s, a: a}, nil
}

func (a *asks) since(n int) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.names[n:]...)
}

type asksSession struct {
	backends.Session
	a *asks
}

func (s *asksSession) Acquire(ctx context.Context, name string, lease time.Duration) (events.Token, error) {
	s.a.mu.Lock()
	s.a.names = append(s.a.names, name)
	s.a.mu.Unlock()
	return s.Session.Acquire(ctx, name, lease)
}

// A waiter that found every slot held and is woken by the release of one
// asks for that slot alone: its first request is for the slot let go, not
// for the slots in its own order that are still held (a woken waiter that
// went through every slot put a write per held slot on etcd's raft log in
// each handover, and reached the free slot last).
func TestWokenWaiterAsksForTheReleasedSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &asks{Backend: memory.New(), id: "waiter"}
		var h backendtest.History
		// No polling: a try after the first is woken by the watch.
		opts := []campaign.Option{campaign.WithRetry(time.Hour), campaign.WithTTL(time.Minute)}
		var holders []*member
		for i := range 3 {
			holders = append(holders, join(t, b, fmt.Sprintf("h%d", i), 3, &h, opts...))
		}
		synctest.Wait()
		if n := len(leaders(holders)); n != 3 {
			t.Fatalf("%d of 3 slots filled", n)
		}
		w := join(t, b, "waiter", 3, &h, opts...)
		synctest.Wait()
		if got := b.since(0); len(got) < 3 {
			t.Fatalf("the waiter asked for %v, want each of the 3 held slots", got)
		}
		// Let go, one after another, each slot but the one the waiter asks
		// for first; it must ask for the slot let go, and get it.
		first := b.since(0)[0]
		for _, m := range holders {
			name := fmt.Sprintf("rollups/slot-%d", m.g.State().Slot)
			if name == first {
				continue
			}
			asked := len(b.since(0))
			m.g.Close()
			synctest.Wait()
			if got := b.since(asked); len(got) != 1 || got[0] != name {
				t.Fatalf("woken by the release of %s, the waiter asked for %v", name, got)
			}
			if s := w.g.State(); !s.Leader || fmt.Sprintf("rollups/slot-%d", s.Slot) != name {
				t.Fatalf("after the release of %s the waiter's state is %+v", name, s)
			}
			break
		}
		for _, m := range append(holders, w) {
			m.g.Close()
		}
	})
}

// lines is a memory backend whose sessions of one candidate say they
// queue their waiters (backends.Dequeuer), as ZooKeeper's do: a try that
// finds a slot held leaves the session in its line. Their Dequeue waits
// at gate, then logs the name.
type lines struct {
	*memory.Backend
	id   string
	gate chan struct{}

	mu   sync.Mutex
	left []string
}

func (l *lines) Open(ctx context.Context, id string, ttl time.Duration) (backends.Session, error) {
	s, err := l.Backend.Open(ctx, id, ttl)
	if err != nil || id != l.id {
		return s, err
	}
	return &linesSession{Session: s, l: l}, nil
}

func (l *lines) dequeued() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.left...)
}

type linesSession struct {
	backends.Session
	l *lines
}

// Dequeue leaves name's line: memory keeps none, so it only lets go of
// the lock if the session holds it.
func (s *linesSession) Dequeue(ctx context.Context, name string) error {
	select {
	case <-s.l.gate:
	case <-ctx.Done():
		return ctx.Err()
	}
	s.l.mu.Lock()
	s.l.left = append(s.l.left, name)
	s.l.mu.Unlock()
	tok, err := s.Session.Acquire(ctx, name, 0)
	if err != nil {
		return nil // held by another: not ours
	}
	return s.Session.Release(ctx, name, tok, 0)
}

// A waiter in the lines of every slot that wins one is elected before it
// leaves the other lines: leaving them is a request each (a delete of its
// node on ZooKeeper), which used to come between the win and the Elected.
func TestElectedBeforeTheOtherLinesAreLeft(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &lines{Backend: memory.New(), id: "waiter", gate: make(chan struct{})}
		var h backendtest.History
		opts := []campaign.Option{campaign.WithRetry(time.Hour), campaign.WithTTL(time.Minute)}
		var holders []*member
		for i := range 3 {
			holders = append(holders, join(t, b, fmt.Sprintf("h%d", i), 3, &h, opts...))
		}
		synctest.Wait()
		w := join(t, b, "waiter", 3, &h, opts...)
		synctest.Wait()
		if w.g.State().Leader {
			t.Fatal("the waiter leads with every slot held")
		}
		holders[0].g.Close()
		synctest.Wait()
		s := w.g.State()
		if !s.Leader {
			t.Fatalf("the waiter is not elected while it leaves the other lines: %+v", s)
		}
		if got := b.dequeued(); len(got) != 0 {
			t.Fatalf("left %v before the gate opened", got)
		}
		close(b.gate)
		synctest.Wait()
		got := b.dequeued()
		if len(got) != 2 || slices.Contains(got, fmt.Sprintf("rollups/slot-%d", s.Slot)) {
			t.Fatalf("elected to slot %d, the waiter left the lines of %v; want the other two", s.Slot, got)
		}
		if s2 := w.g.State(); !s2.Leader || s2.Token != s.Token {
			t.Fatalf("after leaving the other lines the waiter's state is %+v, was %+v", s2, s)
		}
		for _, m := range append(holders, w) {
			m.g.Close()
		}
	})
}
