package zookeeper_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/zookeeper"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/group"
	"github.com/hustings/hustings/internal/testserver"
	"github.com/hustings/hustings/strategy"
)

// The tests below check the group engine with a backend that queues
// waiters: a candidate must never come to hold a slot it does not know of.

// TestGroupLeavesEarlierLines: a group candidate that found both slots
// held waits in both lines; when the first frees, it takes it and must
// leave the other line, or the second slot's release makes it the holder
// of two slots. The engine leaves only the lines it tried in the round it
// won, before the slot it won.
func TestGroupLeavesEarlierLines(t *testing.T) {
	f := newTwoSlots(t)
	// "c" hashes to slot 0 of 2: it tries slot 0 first, and wins it at the
	// first try of its second round.
	g := f.run(t, campaign.WithID("c"))
	f.waitQueued(t)
	f.release(t, 0)
	waitUntil(t, "c elected to slot 0", func() bool { s := g.State(); return s.Leader && s.Slot == 0 })
	f.release(t, 1)
	if h, err := f.b.Holder(t.Context(), f.slot(1)); err != nil || h.ID != "" {
		t.Fatalf("Holder(slot 1) after its release = %+v, %v; want free: c, leading slot 0, was left in slot 1's line", h, err)
	}
}

// TestGroupUnpreferredWaiter: a candidate that queued while the strategy
// preferred it, and is preferred no more, is made a slot's holder by its
// line but never calls Acquire again, so it never learns it: the slot
// stays held by a candidate that does not lead.
func TestGroupUnpreferredWaiter(t *testing.T) {
	f := newTwoSlots(t)
	g := f.run(t, campaign.WithID("n"), group.WithStrategy(strategy.Score()), group.WithScore(1))
	f.waitQueued(t)
	for _, id := range []string{"x", "y"} { // two better candidates, registered without a campaign
		s := f.open(t, id)
		if _, err := s.Register(t.Context(), g.State().Name, strategy.Candidate{Score: 10}); err != nil {
			t.Fatal(err)
		}
	}
	// n ranks again, finds itself out of the top 2 and leaves both lines.
	waitUntil(t, "n left both lines", func() bool { return lineLength(t, f.conn, f.slot(0)) == 1 && lineLength(t, f.conn, f.slot(1)) == 1 })
	f.release(t, 0)
	testserver.EventuallyNil(t, 5*time.Second, func() error {
		h, err := f.b.Holder(t.Context(), f.slot(0))
		s := g.State()
		if err == nil && (h.ID == "" || h.ID == "n" && s.Leader && s.Slot == 0) {
			return nil
		}
		return fmt.Errorf("after slot 0's release: Holder(slot 0) = %+v, %v; n leads: %v (slot %d): n holds slot 0 without knowing", h, err, s.Leader, s.Slot)
	})
}

// TestSharedSessionLeavesLineOnClose: a campaign on a shared session
// (campaign.WithSession) that waits in a lock's line and is closed must
// leave the line: the session lives on, and the lock's release would make
// it the holder of a lock no campaign wants.
func TestSharedSessionLeavesLineOnClose(t *testing.T) {
	f := newTwoSlots(t)
	c := runShared(t, f.b, f.slot(0))
	waitUntil(t, "k queued on slot 0", func() bool { return f.queued(t, 0) })
	c.Close()
	f.release(t, 0)
	if h, err := f.b.Holder(t.Context(), f.slot(0)); err != nil || h.ID != "" {
		t.Fatalf("Holder after the closed campaign's lock was released = %+v, %v; want free: the shared session stayed in line", h, err)
	}
}

// TestSharedSessionLeavesLineWhenClosedMidAcquire: Close that comes while
// an acquire is in flight, after the server queued the session but before
// the campaign heard so, must still take the session out of the line.
func TestSharedSessionLeavesLineWhenClosedMidAcquire(t *testing.T) {
	f := newTwoSlots(t)
	b := &stallAfterQueue{Backend: f.b, queued: make(chan struct{}, 1)}
	c := runShared(t, b, f.slot(0))
	select { // the server put k in line; the campaign has not heard yet
	case <-b.queued:
	case <-time.After(10 * time.Second):
		t.Fatal("k was not queued on slot 0 within 10s")
	}
	c.Close()
	f.release(t, 0)
	if h, err := f.b.Holder(t.Context(), f.slot(0)); err != nil || h.ID != "" {
		t.Fatalf("Holder after the closed campaign's lock was released = %+v, %v; want free: the shared session stayed in line", h, err)
	}
}

// runShared runs a campaign for name on a shared session of candidate k on
// b (TTL 2 s, retry 500 ms), reading its events, until the test ends.
func runShared(t *testing.T, b backends.Backend, name string) *campaign.Campaign {
	k, err := campaign.NewSession(b, campaign.WithID("k"), campaign.WithTTL(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	c, err := campaign.New(b, name, campaign.WithSession(k), campaign.WithRetry(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { c.Close(); _ = k.Close(); wg.Wait() })
	wg.Go(func() { _ = k.Run(context.Background()) })
	wg.Go(func() { _ = c.Run(context.Background()) })
	wg.Go(func() {
		for range c.Events() {
		}
	})
	return c
}

// stallAfterQueue is a ZooKeeper backend whose sessions' Acquire, once the
// server has queued them behind a holder, signals queued and then hangs
// until its context ends: a campaign stopped then has an acquire in flight
// whose effect on the server it never learns.
type stallAfterQueue struct {
	*zookeeper.Backend
	queued chan struct{}
}

func (b *stallAfterQueue) Open(ctx context.Context, id string, ttl time.Duration) (backends.Session, error) {
	s, err := b.Backend.Open(ctx, id, ttl)
	if err != nil {
		return nil, err
	}
	return &stallSession{Session: s, Dequeuer: s.(backends.Dequeuer), queued: b.queued}, nil
}

type stallSession struct {
	backends.Session
	backends.Dequeuer
	queued chan<- struct{}
}

func (s *stallSession) Acquire(ctx context.Context, name string, lease time.Duration) (events.Token, error) {
	tok, err := s.Session.Acquire(ctx, name, lease)
	if !errors.Is(err, backends.ErrHeld) {
		return tok, err
	}
	select {
	case s.queued <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return 0, ctx.Err()
}

// twoSlots is a group of two slots whose locks two sessions, a and b, hold
// before the candidate under test runs. The sessions it opens are
// renewed until the test ends.
type twoSlots struct {
	b       *zookeeper.Backend
	conn    *zk.Conn
	name    string
	holders [2]backends.Session
	tokens  [2]events.Token

	mu       sync.Mutex
	sessions []backends.Session
}

func newTwoSlots(t *testing.T) *twoSlots {
	const timeout = 4 * time.Second
	conn := dial(t, server(t).Addr(), timeout)
	f := &twoSlots{b: newBackend(t, conn, timeout), conn: conn, name: "two"}
	stop, done := make(chan struct{}), make(chan struct{})
	go f.renew(stop, done)
	t.Cleanup(func() { close(stop); <-done })
	for i, id := range []string{"a", "b"} {
		f.holders[i] = f.open(t, id)
		tok, err := f.holders[i].Acquire(t.Context(), f.slot(i), 0)
		if err != nil {
			t.Fatal(err)
		}
		f.tokens[i] = tok
	}
	return f
}

// slot is the lock name of slot i (see group.Group.Name).
func (f *twoSlots) slot(i int) string { return f.name + "/slot-" + string(rune('0'+i)) }

func (f *twoSlots) open(t *testing.T, id string) backends.Session {
	s, err := f.b.Open(t.Context(), id, 4*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	f.mu.Lock()
	f.sessions = append(f.sessions, s)
	f.mu.Unlock()
	return s
}

// renew keeps the sessions of f alive until stop is closed.
func (f *twoSlots) renew(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	for {
		select {
		case <-stop:
			return
		case <-time.After(500 * time.Millisecond):
		}
		f.mu.Lock()
		sessions := slices.Clone(f.sessions)
		f.mu.Unlock()
		for _, s := range sessions {
			_ = s.KeepAlive(context.Background())
		}
	}
}

// run runs a group candidate on the two slots until the test ends.
func (f *twoSlots) run(t *testing.T, opts ...campaign.Option) *campaign.Campaign {
	opts = append(opts, campaign.WithTTL(2*time.Second), campaign.WithRetry(500*time.Millisecond))
	g, err := group.New(f.b, f.name, 2, opts...)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { _ = g.Run(context.Background()) })
	wg.Go(func() {
		for range g.Events() {
		}
	})
	t.Cleanup(func() { g.Close(); wg.Wait() })
	return g
}

// waitQueued waits until the candidate waits in both slots' lines.
func (f *twoSlots) waitQueued(t *testing.T) {
	waitUntil(t, "the candidate queued on both slots", func() bool { return f.queued(t, 0) && f.queued(t, 1) })
}

// queued reports whether a second node waits in slot i's line.
func (f *twoSlots) queued(t *testing.T, i int) bool {
	return lineLength(t, f.conn, f.slot(i)) == 2
}

// lineLength returns how many sessions are in the line of the lock name
// (the holder first), or -1 if it cannot be read.
func lineLength(t *testing.T, conn *zk.Conn, name string) int {
	kids, _, err := conn.Children(root(t) + "/locks/" + url.PathEscape(name))
	if err != nil {
		return -1
	}
	return len(kids)
}

// release releases slot i by its first holder.
func (f *twoSlots) release(t *testing.T, i int) {
	if err := f.holders[i].Release(t.Context(), f.slot(i), f.tokens[i], 0); err != nil {
		t.Fatalf("Release(slot %d): %v", i, err)
	}
}

// waitUntil polls cond, failing the test after 10 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testserver.Eventually(t, what, 10*time.Second, cond)
}
