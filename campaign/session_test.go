package campaign_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
)

// shared starts a candidate and n campaigns on it, and returns them with a
// stop func that closes the campaigns, then the candidate.
func shared(t *testing.T, b backends.Backend, id string, n int) (*campaign.Session, []*node, func()) {
	t.Helper()
	cand, err := campaign.NewSession(b, campaign.WithID(id), campaign.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	candDone := make(chan error, 1)
	go func() { candDone <- cand.Run(context.Background()) }()
	var nodes []*node
	for i := range n {
		c, err := campaign.New(b, fmt.Sprintf("lock-%d", i), campaign.WithSession(cand))
		if err != nil {
			t.Fatal(err)
		}
		nd := &node{c: c, done: make(chan error, 1)}
		go func() { nd.done <- c.Run(context.Background()) }()
		nodes = append(nodes, nd)
	}
	return cand, nodes, func() {
		for _, nd := range nodes {
			closeOK(t, nd.c)
		}
		closeOK(t, cand)
		<-candDone
	}
}

func TestSharedSessionOneKeepAlivePerTick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newCalls(0)
		_, nodes, stop := shared(t, b, "a", 1000)
		synctest.Wait()
		first := map[string]events.Token{}
		for _, nd := range nodes {
			s := nd.c.State()
			if !s.Leader {
				t.Fatalf("%s does not lead", nd.c.State().Name)
			}
			first[nd.c.State().Name] = s.Token
		}
		before := b.keepAlives.Load()
		time.Sleep(10 * ttl) // 30 keep-alive intervals of TTL/3
		synctest.Wait()
		if n := b.keepAlives.Load() - before; n < 25 || n > 35 {
			t.Fatalf("%d keep-alives in 30 intervals for 1,000 campaigns, want one per interval", n)
		}
		for _, nd := range nodes {
			if s := nd.c.State(); !s.Leader || s.Token != first[nd.c.State().Name] {
				t.Fatalf("%s lost its lead while the shared session was renewed: %+v", nd.c.State().Name, s)
			}
		}
		stop()
		if h := holderOf(t, b, "lock-7"); h.ID != "" {
			t.Fatalf("lock-7 still held after everything closed: %+v", h)
		}
	})
}

func TestSharedSessionLostEndsEveryTerm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := &skewedClock{}
		b := memory.New(memory.WithClock(clock))
		_, nodes, stop := shared(t, b, "a", 3)
		first := map[string]events.Event{}
		for _, nd := range nodes {
			first[nd.c.State().Name] = next(t, nd.c.Events())
		}
		clock.offset.Store(int64(2 * ttl)) // the backend forgets the session
		for _, nd := range nodes {
			e := next(t, nd.c.Events())
			if e.Kind != events.Revoked || !errors.Is(e.Reason, events.ErrSessionLost) {
				t.Fatalf("%s: got %s, want revoked with session lost", nd.c.State().Name, e)
			}
			again := next(t, nd.c.Events())
			if again.Kind != events.Elected || again.Token <= first[nd.c.State().Name].Token {
				t.Fatalf("%s: got %s, want a new term with a higher token", nd.c.State().Name, again)
			}
		}
		stop()
	})
}

func TestSharedSessionHangsRevokeAtDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		_, nodes, stop := shared(t, b, "a", 2)
		won := next(t, nodes[0].c.Events())
		next(t, nodes[1].c.Events())
		b.Partition("a")
		for _, nd := range nodes {
			deadline := nd.c.State().Deadline
			e := next(t, nd.c.Events())
			if e.Kind != events.Revoked || e.Time.After(deadline) {
				t.Fatalf("%s: got %s at %v, want revoked by the deadline %v", nd.c.State().Name, e, e.Time, deadline)
			}
		}
		b.Heal("a")
		again := next(t, nodes[0].c.Events())
		if again.Kind != events.Elected || again.Token <= won.Token {
			t.Fatalf("after the partition got %s, want a new term with a token above %d", again, won.Token)
		}
		stop()
	})
}

func TestSharedSessionCloseReleasesOnlyItsLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		_, nodes, stop := shared(t, b, "a", 2)
		next(t, nodes[0].c.Events())
		next(t, nodes[1].c.Events())
		closeOK(t, nodes[0].c)
		if h := holderOf(t, b, "lock-0"); h.ID != "" {
			t.Fatalf("lock-0 held after its campaign closed: %+v", h)
		}
		if h := holderOf(t, b, "lock-1"); h.ID != "a" {
			t.Fatalf("lock-1 lost when another campaign on the session closed: %+v", h)
		}
		if err := nodes[1].c.Resign(t.Context()); err != nil {
			t.Fatalf("Resign: %v", err)
		}
		if h := holderOf(t, b, "lock-1"); h.ID != "" {
			t.Fatalf("lock-1 held after Resign on the shared session: %+v", h)
		}
		if _, err := b.Holder(t.Context(), "lock-1"); err != nil {
			t.Fatal(err)
		}
		stop()
	})
}

func TestWithSessionRejectsAnotherBackend(t *testing.T) {
	cand, err := campaign.NewSession(memory.New())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := campaign.New(memory.New(), "x", campaign.WithSession(cand)); !errors.Is(err, campaign.ErrInvalid) {
		t.Fatalf("err = %v, want ErrInvalid", err)
	}
	closeOK(t, cand)
}

func TestCandidateRunsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cand, err := campaign.NewSession(memory.New())
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- cand.Run(ctx) }()
		synctest.Wait()
		if err := cand.Run(t.Context()); !errors.Is(err, campaign.ErrInvalid) {
			t.Fatalf("Run while running = %v, want ErrInvalid", err)
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("Run = %v, want context.Canceled", err)
		}
		if err := cand.Run(t.Context()); !errors.Is(err, campaign.ErrClosed) {
			t.Fatalf("Run after it ended = %v, want ErrClosed", err)
		}
		closeOK(t, cand)
	})
}

// Two campaigns for one name on one session would both be told they hold
// it, under one token: the second one's Run is refused, and once the first
// is closed a new campaign for the name is elected.
func TestSharedCandidateRefusesTheSameNameTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		cand := newSession(t, b, campaign.WithID("a"), campaign.WithTTL(ttl))
		runCandidate(t, cand)
		c1 := run(t, newCampaign(t, b, "lock", campaign.WithSession(cand)))
		c2 := newCampaign(t, b, "lock", campaign.WithSession(cand))
		next(t, c1.c.Events())
		if err := c2.Run(t.Context()); !errors.Is(err, campaign.ErrInvalid) {
			t.Errorf("second campaign for the same name on one candidate: Run = %v, want ErrInvalid", err)
		}
		if err := c2.Close(); err != nil {
			t.Errorf("Close of the refused campaign: %v", err)
		}
		c1.stop(t)
		c3 := run(t, newCampaign(t, b, "lock", campaign.WithSession(cand)))
		if e := next(t, c3.c.Events()); e.Kind != events.Elected {
			t.Errorf("after the first closed, a new campaign for the name got %s", e)
		}
		c3.stop(t)
	})
}

// A session and its campaigns that stop on one context (the usual
// signal.NotifyContext pattern) keep the lock until the work bound to the
// term has returned, within the grace period: no other candidate takes the
// lock while that work runs.
func TestCandidateStopWaitsForTermWork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		ctx, cancel := context.WithCancel(context.Background())
		cand := newSession(t, b, campaign.WithID("a"), campaign.WithTTL(ttl))
		cd := make(chan error, 1)
		go func() { cd <- cand.Run(ctx) }()
		c := newCampaign(t, b, "lock", campaign.WithSession(cand), campaign.WithGrace(5*time.Second))
		var workDone atomic.Bool
		wd := make(chan error, 1)
		go func() {
			wd <- campaign.WhileLeader(ctx, c, func(ctx context.Context, term events.Event) error {
				<-ctx.Done()
				time.Sleep(2 * time.Second) // finishing a write, within the grace period
				workDone.Store(true)
				return nil
			})
		}()
		time.Sleep(time.Second)
		if !c.State().Leader {
			t.Fatal("not elected")
		}
		cancel()
		time.Sleep(100 * time.Millisecond)
		o, err := b.Open(t.Context(), "other", ttl)
		if err != nil {
			t.Fatal(err)
		}
		if tok, err := o.Acquire(t.Context(), "lock", 0); err == nil && !workDone.Load() {
			t.Errorf("another candidate took the lock (token %d) while the old term's work was still running (contract 5)", tok)
		}
		if err := o.Close(t.Context()); err != nil {
			t.Error(err)
		}
		// The campaign's Run ends with its context or with its session,
		// whichever it sees first.
		if err := <-wd; !errors.Is(err, context.Canceled) && !errors.Is(err, campaign.ErrClosed) {
			t.Errorf("WhileLeader = %v, want context.Canceled or ErrClosed", err)
		}
		if err := <-cd; !errors.Is(err, context.Canceled) {
			t.Errorf("the session's Run = %v, want context.Canceled", err)
		}
	})
}

// refusing is a backend that refuses every session, as ZooKeeper does a
// TTL over its session timeout.
type refusing struct{ *memory.Backend }

func (refusing) Open(context.Context, string, time.Duration) (backends.Session, error) {
	return nil, fmt.Errorf("%w: TTL over the session timeout", backends.ErrInvalid)
}

// TestCandidateRefusedSessionEnds: a session the backend refuses is not
// retried forever in silence: the candidate's Run returns ErrInvalid, and
// its campaigns end.
func TestCandidateRefusedSessionEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := refusing{memory.New()}
		cand, err := campaign.NewSession(b, campaign.WithID("a"))
		if err != nil {
			t.Fatal(err)
		}
		c, err := campaign.New(b, "x", campaign.WithSession(cand))
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- c.Run(context.Background()) }()
		if err := cand.Run(context.Background()); !errors.Is(err, campaign.ErrInvalid) || !errors.Is(err, backends.ErrInvalid) {
			t.Fatalf("candidate's Run = %v, want ErrInvalid", err)
		}
		if err := <-done; !errors.Is(err, campaign.ErrClosed) {
			t.Fatalf("campaign's Run = %v, want ErrClosed", err)
		}
	})
}

// Session.Campaign starts campaigns that need no goroutine, neither the
// caller's nor their own, once they hold: a thousand held campaigns add a
// handful of goroutines (the session's), not one each. They end with
// Close, or all at once when the session stops, each after the Revoked
// that ends its term; Run on one is ErrInvalid.
func TestSessionCampaignHoldsWithoutGoroutines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		s, err := campaign.NewSession(b, campaign.WithID("a"), campaign.WithTTL(ttl))
		if err != nil {
			t.Fatal(err)
		}
		sessDone := make(chan error, 1)
		go func() { sessDone <- s.Run(context.Background()) }()
		synctest.Wait()
		before := runtime.NumGoroutine()
		const n = 1000
		cs := make([]*campaign.Campaign, n)
		for i := range cs {
			if cs[i], err = s.Campaign(fmt.Sprint("lock-", i)); err != nil {
				t.Fatal(err)
			}
		}
		for i, c := range cs {
			if e := next(t, c.Events()); e.Kind != events.Elected {
				t.Fatalf("campaign %d: first event %s, want elected", i, e)
			}
		}
		time.Sleep(3 * ttl) // renewals go on; every term holds
		synctest.Wait()
		added := runtime.NumGoroutine() - before
		t.Logf("%d held campaigns added %d goroutines", n, added)
		if added > 10 {
			t.Errorf("%d held campaigns added %d goroutines; want a few, not one a campaign", n, added)
		}
		for i, c := range cs {
			if st := c.State(); !st.Leader {
				t.Fatalf("campaign %d lost its term while held: %+v", i, st)
			}
		}
		if err := cs[0].Run(t.Context()); !errors.Is(err, campaign.ErrInvalid) {
			t.Errorf("Run on a started campaign = %v, want ErrInvalid", err)
		}
		if err := cs[0].Close(); err != nil {
			t.Fatal(err)
		}
		if e := next(t, cs[0].Events()); e.Kind != events.Revoked || !errors.Is(e.Reason, events.ErrResigned) {
			t.Fatalf("after Close got %s, want revoked: resigned", e)
		}
		if h := holderOf(t, b, "lock-0"); h.ID != "" {
			t.Errorf("lock-0 still held by %+v after its campaign closed", h)
		}
		closeOK(t, s)
		if err := <-sessDone; !errors.Is(err, campaign.ErrClosed) {
			t.Errorf("session Run = %v, want ErrClosed", err)
		}
		for i, c := range cs[1:] {
			e, ok := <-c.Events()
			if !ok || e.Kind != events.Revoked {
				t.Fatalf("campaign %d after the session closed: %s, %v; want revoked", i+1, e, ok)
			}
			if _, ok := <-c.Events(); ok {
				t.Fatalf("campaign %d: events not closed after the session closed", i+1)
			}
		}
		if _, err := s.Campaign("late"); !errors.Is(err, campaign.ErrClosed) {
			t.Errorf("Campaign on a closed session = %v, want ErrClosed", err)
		}
	})
}
