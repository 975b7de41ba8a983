package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/group"
	"github.com/hustings/hustings/internal/crash"
	"github.com/hustings/hustings/strategy"
)

const (
	ttl   = 2 * time.Second
	retry = 250 * time.Millisecond
)

// runShow runs "demo [show] [--backend URL]".
func runShow(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("demo show", flag.ContinueOnError)
	fs.SetOutput(stderr)
	backendURL := fs.String("backend", "memory", "backend URL: "+backendUsage)
	if err := fs.Parse(args); err != nil {
		return err
	}
	b, closeBackend, err := openBackend(ctx, *backendURL)
	if err != nil {
		return err
	}
	defer closeBackend()
	return show(ctx, b, *backendURL, stdout)
}

// show is the scripted show: each act waits for what it shows, so it takes
// as long as the backend needs, about 12 s on the memory backend.
func show(ctx context.Context, b backends.Backend, backendURL string, w io.Writer) error {
	s := &stage{b: b, tl: newTimeline(w), elected: make(chan events.Event, 64),
		prefix: fmt.Sprintf("demo-%x", time.Now().UnixNano()%0xffffff)}
	defer s.closeAll()
	s.tl.note("five candidates campaign for one lock on %s (TTL %v, retry %v)", backendURL, ttl, retry)
	s.tl.header()
	acts := []func(context.Context) error{s.election, s.crash, s.resign, s.slowConsumer, s.weightedGroup}
	for _, act := range acts {
		if err := act(ctx); err != nil {
			return err
		}
	}
	s.mu.Lock()
	s.tl.note("fencing tokens of the reconcile lock only grew: %v", s.tokens)
	s.mu.Unlock()
	s.tl.note("the end: every campaign closes")
	return nil
}

// stage holds the show's cast.
type stage struct {
	b       backends.Backend
	tl      *timeline
	prefix  string
	elected chan events.Event
	cast    map[string]*actor
	order   []string
	leader  string
	mu      sync.Mutex
	tokens  []events.Token // of the reconcile lock, as elected
	wg      sync.WaitGroup
	closers []closer
}

// closer closes one campaign; leading tells whether it leads now.
type closer struct {
	leading func() bool
	close   func()
}

// actor is one candidate of the show, behind its own crashable link.
type actor struct {
	c     *campaign.Campaign
	link  *crash.Backend
	ticks atomic.Int64
}

func (s *stage) lock() string { return s.prefix + "/reconcile" }

// election starts five candidates; the winner runs a reconcile loop under
// its term's context.
func (s *stage) election(ctx context.Context) error {
	s.cast = map[string]*actor{}
	for _, id := range []string{"alpha", "bravo", "charlie", "delta", "echo"} {
		if err := s.enter(ctx, id); err != nil {
			return err
		}
	}
	e, err := s.await(ctx)
	if err != nil {
		return err
	}
	s.leader = e.Holder
	time.Sleep(3 * retry)
	s.tl.note("%s leads and reconciles every %v under its term's context (%d passes so far)", e.Holder, retry, s.cast[e.Holder].passes())
	return nil
}

// enter starts candidate id: a campaign whose work is a reconcile loop.
func (s *stage) enter(ctx context.Context, id string) error {
	link := crash.New(s.b)
	c, err := campaign.New(link, s.lock(), campaign.WithID(id), campaign.WithTTL(ttl), campaign.WithRetry(retry))
	if err != nil {
		return err
	}
	a := &actor{c: c, link: link}
	s.cast[id], s.order = a, append(s.order, id)
	s.follow(ctx, c.Subscribe(ctx))
	s.wg.Go(func() { _ = campaign.WhileLeader(ctx, c, a.reconcile) })
	s.closers = append(s.closers, closer{func() bool { return c.State().Leader }, func() { c.Close() }})
	return nil
}

// reconcile is the leader's work: a pass per retry interval, until the
// term's context ends.
func (a *actor) reconcile(ctx context.Context, term events.Event) error {
	t := time.NewTicker(retry)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil // the term ended: stop writing at once
		case <-t.C:
			a.ticks.Add(1) // a real loop would write here, with term.Token
		}
	}
}

func (a *actor) passes() int64 { return a.ticks.Load() }

// follow prints a subscription's events and forwards Elected ones.
func (s *stage) follow(ctx context.Context, ch <-chan events.Event) {
	s.wg.Go(func() {
		for e := range ch {
			s.tl.event(e)
			if e.Kind == events.Elected && strings.HasSuffix(e.Name, "/reconcile") {
				s.mu.Lock()
				s.tokens = append(s.tokens, e.Token)
				s.mu.Unlock()
				s.elected <- e
			}
		}
	})
}

// await returns the next Elected event of the lock.
func (s *stage) await(ctx context.Context) (events.Event, error) {
	select {
	case e := <-s.elected:
		return e, nil
	case <-time.After(time.Minute):
		return events.Event{}, fmt.Errorf("nobody was elected within a minute")
	case <-ctx.Done():
		return events.Event{}, ctx.Err()
	}
}

// crash stops the leader's calls to the backend: it revokes itself at its
// local deadline, and another candidate takes over once the lease is gone.
func (s *stage) crash(ctx context.Context) error {
	s.tl.note("%s crashes: its calls to the backend hang from now on", s.leader)
	began := time.Now()
	s.cast[s.leader].link.Crash()
	e, err := s.await(ctx)
	if err != nil {
		return err
	}
	s.tl.note("%s took over %v after the crash (TTL %v + retry); %s had revoked itself first, at its deadline",
		e.Holder, since(began), ttl, s.leader)
	s.leader = e.Holder
	return nil
}

// resign hands the lock over gracefully: the waiters are woken by the
// backend, not by polling.
func (s *stage) resign(ctx context.Context) error {
	s.tl.note("%s resigns", s.leader)
	began := time.Now()
	if err := s.cast[s.leader].c.Resign(ctx); err != nil {
		return err
	}
	e, err := s.await(ctx)
	if err != nil {
		return err
	}
	s.tl.note("%s took over %v after the resignation: woken by the release", e.Holder, since(began))
	s.leader = e.Holder
	return nil
}

// slowConsumer shows that a reader who never reads does not keep a term
// alive: revocation is on time whatever the channel holds.
func (s *stage) slowConsumer(ctx context.Context) error {
	link := crash.New(s.b)
	c, err := campaign.New(link, s.prefix+"/nightly", campaign.WithID("foxtrot"), campaign.WithTTL(ttl), campaign.WithRetry(retry))
	if err != nil {
		return err
	}
	s.wg.Go(func() { _ = c.Run(ctx) }) // nobody ever reads c.Events()
	s.closers = append(s.closers, closer{func() bool { return c.State().Leader }, func() { c.Close() }})
	if err := waitUntil(ctx, func() bool { return c.State().Leader }); err != nil {
		return err
	}
	s.tl.note("foxtrot leads another lock; nobody reads its events; it crashes too")
	link.Crash()
	if err := waitUntil(ctx, func() bool { return !c.State().Leader }); err != nil {
		return err
	}
	revoked := c.State().LastEvent
	s.tl.note("foxtrot revoked itself on time, %v before its deadline (%s), though nobody ever read its channel (events dropped: %d)",
		revoked.Deadline.Sub(revoked.Time).Round(time.Millisecond), reason(revoked.Reason), c.State().Dropped)
	return nil
}

// weightedGroup runs five candidates for a group of three slots, preferring
// them by weighted rendezvous hashing.
func (s *stage) weightedGroup(ctx context.Context) error {
	name := s.prefix + "/rollups"
	weights := map[string]float64{"golf": 1, "hotel": 2, "india": 3, "juliett": 4, "kilo": 5}
	var gs []*group.Group
	s.tl.group(name)
	for _, id := range slices.Sorted(maps.Keys(weights)) {
		g, err := group.New(s.b, name, 3, campaign.WithID(id), campaign.WithTTL(ttl), campaign.WithRetry(retry),
			group.WithStrategy(strategy.Weighted()), group.WithWeight(weights[id]), group.WithPreemption(ttl))
		if err != nil {
			return err
		}
		gs = append(gs, g)
		s.follow(ctx, g.Subscribe(ctx))
		s.wg.Go(func() { _ = g.Run(ctx) })
		s.closers = append(s.closers, closer{func() bool { return g.State().Leader }, func() { g.Close() }})
	}
	s.tl.note("a group of 3 slots for 5 candidates weighted 1 to 5 (golf … kilo), strategy weighted")
	want, err := topByWeight(name, weights, 3)
	if err != nil {
		return err
	}
	if err := waitUntil(ctx, func() bool { return slices.Equal(holders(gs), want) }); err != nil {
		return fmt.Errorf("the group did not settle on %v: %w", want, err)
	}
	s.tl.note("slots held by %v: the top 3 of this epoch's weighted draw, the same on every node", want)
	return nil
}

// topByWeight ranks the candidates as every node does and returns the
// first n IDs, sorted.
func topByWeight(group string, weights map[string]float64, n int) ([]string, error) {
	var cs []strategy.Candidate
	for id, w := range weights {
		cs = append(cs, strategy.Candidate{ID: id, Weight: w})
	}
	ranked, err := strategy.Weighted().Rank(group, 0, cs)
	if err != nil {
		return nil, err
	}
	var top []string
	for _, c := range ranked[:n] {
		top = append(top, c.ID)
	}
	slices.Sort(top)
	return top, nil
}

func holders(gs []*group.Group) []string {
	var ids []string
	for _, g := range gs {
		if g.State().Leader {
			ids = append(ids, g.ID())
		}
	}
	slices.Sort(ids)
	return ids
}

// closeAll closes the followers, then the leaders, so that nobody takes
// over from a closing leader; each group at once, as a crashed campaign
// takes up to a TTL to give up on its calls. Then it waits for every
// goroutine of the show.
func (s *stage) closeAll() {
	for _, leaders := range []bool{false, true} {
		var closing sync.WaitGroup
		for _, c := range s.closers {
			if c.leading() == leaders {
				closing.Go(c.close)
			}
		}
		closing.Wait()
	}
	s.wg.Wait()
}

// waitUntil polls cond until it holds, for up to a minute.
func waitUntil(ctx context.Context, cond func() bool) error {
	limit := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(limit) {
			return fmt.Errorf("not so within a minute")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
}

func since(t time.Time) time.Duration { return time.Since(t).Round(100 * time.Microsecond) }
