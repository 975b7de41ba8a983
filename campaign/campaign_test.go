package campaign_test

import (
	"cmp"
	"context"
	"errors"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/elector"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const ttl = 10 * time.Second

// node is one candidate running in the test bubble.
type node struct {
	c    *campaign.Campaign
	done chan error
}

// start runs a campaign for id on b and returns it; stop it with Close.
func start(t *testing.T, b backends.Backend, id string, opts ...campaign.Option) *node {
	t.Helper()
	opts = append([]campaign.Option{campaign.WithID(id), campaign.WithTTL(ttl)}, opts...)
	c, err := campaign.New(b, "lock", opts...)
	if err != nil {
		t.Fatalf("New(%s): %v", id, err)
	}
	return run(t, c)
}

// run runs c and returns it as a node; stop it with Close.
func run(t *testing.T, c *campaign.Campaign) *node {
	n := &node{c: c, done: make(chan error, 1)}
	go func() { n.done <- c.Run(context.Background()) }()
	t.Cleanup(func() { closeOK(t, c) }) // after a failure; Close waits for Run
	return n
}

// newCampaign is campaign.New that fails the test on an error.
func newCampaign(t *testing.T, b backends.Backend, name string, opts ...campaign.Option) *campaign.Campaign {
	t.Helper()
	c, err := campaign.New(b, name, opts...)
	if err != nil {
		t.Fatalf("New(%s): %v", name, err)
	}
	return c
}

// newSession is campaign.NewSession that fails the test on an error.
func newSession(t *testing.T, b backends.Backend, opts ...campaign.Option) *campaign.Session {
	t.Helper()
	s, err := campaign.NewSession(b, opts...)
	if err != nil {
		t.Fatalf("NewSession: %v", err)
	}
	return s
}

// holding opens a session for id on b, with a TTL of an hour, that holds
// name; the caller closes it. Errors fail the test.
func holding(t *testing.T, b backends.Backend, id, name string) (backends.Session, events.Token) {
	t.Helper()
	s, err := b.Open(t.Context(), id, time.Hour)
	if err != nil {
		t.Fatalf("Open(%s): %v", id, err)
	}
	tok, err := s.Acquire(t.Context(), name, 0)
	if err != nil {
		t.Fatalf("%s: Acquire(%s): %v", id, name, err)
	}
	return s, tok
}

// holderOf returns name's holder on b, failing the test on an error.
func holderOf(t *testing.T, b backends.Backend, name string) backends.Holder {
	t.Helper()
	h, err := b.Holder(t.Context(), name)
	if err != nil {
		t.Fatalf("Holder(%s): %v", name, err)
	}
	return h
}

// stop closes the campaign and returns what Run returned, which must be
// ErrClosed: only Close ends the Run that start and run begin.
func (n *node) stop(t *testing.T) error {
	t.Helper()
	closeOK(t, n.c)
	err := <-n.done
	if !errors.Is(err, campaign.ErrClosed) {
		t.Errorf("Run = %v, want ErrClosed", err)
	}
	return err
}

// closeOK closes c, failing the test on an error; safe to call from any
// goroutine.
func closeOK(t *testing.T, c io.Closer) {
	t.Helper()
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// next returns the next event, failing after a generous (virtual) wait.
func next(t *testing.T, ch <-chan events.Event) events.Event {
	t.Helper()
	select {
	case e, ok := <-ch:
		if !ok {
			t.Fatal("event channel closed")
		}
		return e
	case <-time.After(10 * time.Minute):
		t.Fatal("no event within 10 minutes")
	}
	return events.Event{}
}

// leaderOf waits for one of the nodes to be elected and returns it.
func leaderOf(t *testing.T, nodes ...*node) (*node, events.Event) {
	t.Helper()
	synctest.Wait()
	for _, n := range nodes {
		select {
		case e := <-n.c.Events():
			if e.Kind != events.Elected {
				t.Fatalf("%s: first event %s, want elected", n.c.State().ID, e)
			}
			return n, e
		default:
		}
	}
	t.Fatal("nobody was elected")
	return nil, events.Event{}
}

func TestOneLeaderAndGracefulHandover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		nodes := []*node{start(t, b, "a"), start(t, b, "b"), start(t, b, "c")}
		leader, won := leaderOf(t, nodes...)
		for _, n := range nodes {
			if s := n.c.State(); s.Leader != (n == leader) {
				t.Errorf("%s: State().Leader = %v", n.c.State().ID, s.Leader)
			}
		}
		if h := holderOf(t, b, "lock"); h.ID != won.Holder || h.Token != won.Token {
			t.Fatalf("backend holder %+v, elected event %s", h, won)
		}

		resigned := time.Now()
		if err := leader.c.Resign(t.Context()); err != nil {
			t.Fatalf("Resign: %v", err)
		}
		if e := next(t, leader.c.Events()); e.Kind != events.Revoked || e.Token != won.Token || !errors.Is(e.Reason, events.ErrResigned) {
			t.Fatalf("after Resign got %s, want revoked(%d) resigned", e, won.Token)
		}
		var rest []*node
		for _, n := range nodes {
			if n != leader {
				rest = append(rest, n)
			}
		}
		_, won2 := leaderOf(t, rest...)
		if won2.Token <= won.Token {
			t.Errorf("new token %d not above %d", won2.Token, won.Token)
		}
		// The waiter was woken by the release, not by its retry timer.
		if took := won2.Time.Sub(resigned); took >= elector.DefaultRetry {
			t.Errorf("handover took %v, not under one retry interval", took)
		}
		for _, n := range nodes {
			if err := n.stop(t); !errors.Is(err, campaign.ErrClosed) {
				t.Errorf("Run returned %v, want ErrClosed", err)
			}
		}
	})
}

func TestRevokedAtDeadlineWhileBackendHangs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		a := start(t, b, "a")
		won := next(t, a.c.Events())
		termCtx, _, done, ok := a.c.Term(won.Token)
		if !ok {
			t.Fatal("no term context while elected")
		}
		done()
		time.Sleep(ttl) // a few renewals
		deadline := a.c.State().Deadline
		if !deadline.After(won.Deadline) {
			t.Fatalf("deadline %v not extended past %v by renewals", deadline, won.Deadline)
		}

		b.Partition("a") // every call of a now hangs
		other := start(t, b, "b")
		e := next(t, a.c.Events())
		if e.Kind != events.Revoked || !errors.Is(e.Reason, events.ErrLeaseExpired) || !errors.Is(e.Reason, backends.ErrUnavailable) {
			t.Fatalf("got %s, want revoked for an unreachable backend", e)
		}
		if e.Time.After(deadline) {
			t.Errorf("revoked at %v, after the deadline %v", e.Time, deadline)
		}
		if termCtx.Err() == nil {
			t.Error("term context not cancelled at revocation")
		}
		won2 := next(t, other.c.Events())
		if won2.Kind != events.Elected || !won2.Time.After(e.Time) {
			t.Fatalf("b: %s at %v; a revoked at %v", won2, won2.Time, e.Time)
		}
		if wait := won2.Time.Sub(deadline); wait > ttl+elector.DefaultRetry+elector.DefaultRetry/5 {
			t.Errorf("failover took %v after the deadline", wait)
		}
		b.Heal("a")
		other.stop(t)
		a.stop(t)
	})
}

func TestSlowConsumerDoesNotDelayRenewalOrRevocation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		a := start(t, b, "a") // nobody reads a's events
		synctest.Wait()
		won := a.c.State()
		for range 20 {
			time.Sleep(ttl)
			if s := a.c.State(); !s.Leader || s.Token != won.Token {
				t.Fatalf("lost the lead while renewing: %+v", s)
			}
		}
		deadline := a.c.State().Deadline
		b.Partition("a")
		time.Sleep(time.Until(deadline))
		synctest.Wait()
		if s := a.c.State(); s.Leader {
			t.Fatalf("still leader at the deadline with nobody reading events: %+v", s)
		}
		// The term began and ended unread: a late reader is owed nothing.
		select {
		case e := <-a.c.Events():
			t.Fatalf("late reader got %s for a term it never saw begin", e)
		default:
		}
		if d := a.c.State().Dropped; d == 0 {
			t.Error("Dropped = 0 after the unread term was replaced")
		}
		b.Heal("a")
		a.stop(t)
	})
}

func TestNeverTwoLeaders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		ids := []string{"a", "b", "c", "d", "e"}
		var mu sync.Mutex
		var log []events.Event
		var nodes []*node
		var readers sync.WaitGroup
		for _, id := range ids {
			n := start(t, b, id, campaign.WithRetry(300*time.Millisecond))
			nodes = append(nodes, n)
			readers.Go(func() {
				for e := range n.c.Events() {
					mu.Lock()
					log = append(log, e)
					mu.Unlock()
				}
			})
		}
		// Partition and resign leaders for a while, on a fixed pattern.
		for i := range 30 {
			time.Sleep(7 * time.Second)
			for _, id := range ids {
				b.Heal(id)
			}
			for _, n := range nodes {
				if n.c.State().Leader {
					if i%2 == 0 {
						b.Partition(n.c.State().ID)
					} else {
						if err := n.c.Resign(t.Context()); err != nil {
							t.Errorf("Resign: %v", err)
						}
					}
				}
			}
		}
		for _, id := range ids {
			b.Heal(id)
		}
		for _, n := range nodes {
			n.stop(t)
		}
		readers.Wait()
		// Readers of different campaigns append in any order within one
		// instant; within it, terms are ordered by token (a resigning
		// leader's Revoked is published before its release).
		slices.SortStableFunc(log, func(x, y events.Event) int {
			return cmp.Or(x.Time.Compare(y.Time), cmp.Compare(x.Token, y.Token), cmp.Compare(x.Kind, y.Kind))
		})
		checkHistory(t, log)
	})
}

// checkHistory checks a merged history: terms pair up, tokens increase in
// the order terms begin, and no two terms overlap in time.
func checkHistory(t *testing.T, log []events.Event) {
	t.Helper()
	open := map[string]events.Event{}
	var last events.Token
	elected := 0
	for _, e := range log {
		switch e.Kind {
		case events.Elected:
			elected++
			if e.Token <= last {
				t.Fatalf("token %d after %d", e.Token, last)
			}
			last = e.Token
			for id, o := range open {
				t.Fatalf("%s elected at %v while %s leads (token %d)", e.Holder, e.Time, id, o.Token)
			}
			open[e.Holder] = e
		case events.Revoked:
			if o, ok := open[e.Holder]; !ok || o.Token != e.Token {
				t.Fatalf("revoked %s without its elected", e)
			}
			delete(open, e.Holder)
		}
	}
	if elected < 10 {
		t.Fatalf("only %d terms: the test exercised too little", elected)
	}
	if len(open) != 0 {
		t.Fatalf("terms left open after every campaign closed: %v", open)
	}
}

// skewedClock is the backend's clock: the bubble's time plus an offset the
// test moves, so the backend can see a session expire before the campaign's
// deadline (as after a server restart that lost it).
type skewedClock struct{ offset atomic.Int64 }

func (c *skewedClock) Now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

func TestSessionLostEndsTheTermAndCampaignGoesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := &skewedClock{}
		b := memory.New(memory.WithClock(clock))
		a := start(t, b, "a")
		won := next(t, a.c.Events())
		clock.offset.Store(int64(2 * ttl)) // the backend forgets a's session
		e := next(t, a.c.Events())
		if e.Kind != events.Revoked || !errors.Is(e.Reason, events.ErrSessionLost) {
			t.Fatalf("got %s, want revoked with session lost", e)
		}
		if e.Time.After(won.Deadline) {
			t.Errorf("revoked at %v, after the deadline %v", e.Time, won.Deadline)
		}
		again := next(t, a.c.Events())
		if again.Kind != events.Elected || again.Token <= won.Token {
			t.Fatalf("got %s, want a new term with a higher token on a new session", again)
		}
		a.stop(t)
	})
}
