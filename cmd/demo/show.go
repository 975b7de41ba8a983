package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/dial"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/hustingstest"
	"github.com/hustings/hustings/transport/httpapi"
)

const (
	ttl   = 2 * time.Second
	retry = 250 * time.Millisecond
)

// runShow runs "demo [show] [--backend URL] [--dial-timeout D]".
func runShow(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var bf backendFlags
	var addr string
	fs := flag.NewFlagSet("demo show", flag.ContinueOnError)
	bf.register(fs, "memory")
	registerHTTP(fs, &addr)
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	target, err := bf.check()
	if err != nil {
		return err
	}
	b, closeBackend, err := bf.open(ctx)
	if err != nil {
		return err
	}
	defer closeBackend()
	var page *httpapi.Handler
	if addr != "" {
		page = httpapi.New()
		live, err := serveLive(addr, page)
		if err != nil {
			return err
		}
		defer live.close() // after the show has closed its campaigns
		fmt.Fprintf(stderr, "demo: the live page is at %s\n", live.url)
	}
	return show(ctx, b, target, stdout, page)
}

// show is the scripted show: each act waits for what it shows, so it takes
// as long as the backend needs, about 9 s on the memory backend. With a
// page (--http), every campaign and group of the show is registered with
// it, and the show holds its last scene until ctx ends, so that the page
// can be looked at.
func show(ctx context.Context, b backends.Backend, target dial.Target, w io.Writer, page *httpapi.Handler) error {
	s := &stage{b: b, tl: newTimeline(w, target), elected: make(chan events.Event, 64), page: page,
		prefix: fmt.Sprintf("demo-%x", time.Now().UnixNano()%0xffffff)}
	defer s.tl.flush() // last: after the campaigns closed
	defer s.closeAll()
	s.tl.note("five candidates campaign for one lock on %s (TTL %v, retry %v); a leader revokes itself at its term's deadline unless a keep-alive moved it on", target.Redacted(), ttl, retry)
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
	if page != nil {
		s.tl.note("the show holds its last scene for the live page until Ctrl-C")
		<-ctx.Done()
	}
	return nil
}

// stage holds the show's cast.
type stage struct {
	b            backends.Backend
	tl           *timeline
	page         *httpapi.Handler // nil without --http
	prefix       string
	elected      chan events.Event
	cast         map[string]*actor
	leader       string
	crashed      []string                  // names of the crashed candidates, for the end
	crashedLinks []*hustingstest.Crashable // their links
	mu           sync.Mutex
	tokens       []events.Token // of the reconcile lock, as elected
	printed      []events.Event // every event the followers printed
	wg           sync.WaitGroup
	closers      []closer
}

// register shows c on the live page, if there is one.
func (s *stage) register(c *campaign.Campaign) {
	if s.page != nil {
		s.page.Register(c)
	}
}

// closer closes one campaign; leading tells whether it leads now.
type closer struct {
	leading func() bool
	close   func()
}

// actor is one candidate of the show, behind its own crashable link.
type actor struct {
	c     *campaign.Campaign
	link  *hustingstest.Crashable
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
	s.tl.note("%s won; it reconciles every %v under its term's context (%d passes so far); the others wait", e.Holder, retry, s.cast[e.Holder].passes())
	return nil
}

// enter starts candidate id: a campaign whose work is a reconcile loop.
func (s *stage) enter(ctx context.Context, id string) error {
	link := hustingstest.NewCrashable(s.b)
	c, err := campaign.New(link, s.lock(), campaign.WithID(id), campaign.WithTTL(ttl), campaign.WithRetry(retry))
	if err != nil {
		return err
	}
	a := &actor{c: c, link: link}
	s.cast[id] = a
	s.register(c)
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
			s.mu.Lock()
			s.printed = append(s.printed, e)
			reconcile := e.Kind == events.Elected && e.Name == s.lock()
			if reconcile {
				s.tokens = append(s.tokens, e.Token)
			}
			s.mu.Unlock()
			if reconcile {
				s.elected <- e
			}
		}
	})
}

// awaitPrinted waits until the followers have printed the event of
// holder of kind on name: a note that tells of an event comes after its
// row.
func (s *stage) awaitPrinted(ctx context.Context, kind events.Kind, name, holder string) error {
	return waitUntil(ctx, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return slices.ContainsFunc(s.printed, func(e events.Event) bool { return e.Kind == kind && e.Name == name && e.Holder == holder })
	})
}

// printedLeaders returns who leads name by the events printed, sorted.
func (s *stage) printedLeaders(name string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	leads := map[string]bool{}
	for _, e := range s.printed {
		if e.Name == name {
			leads[e.Holder] = e.Kind == events.Elected
		}
	}
	var ids []string
	for id, l := range leads {
		if l {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
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
	s.tl.note("%s crashes: its calls to the backend hang from now on, its keep-alives too", s.leader)
	began := time.Now()
	s.cast[s.leader].link.Crash()
	s.crashed, s.crashedLinks = append(s.crashed, s.leader), append(s.crashedLinks, s.cast[s.leader].link)
	e, err := s.await(ctx)
	if err != nil {
		return err
	}
	if err := s.awaitPrinted(ctx, events.Revoked, s.lock(), s.leader); err != nil {
		return err
	}
	s.tl.note("%s revoked itself at its deadline; %s took over %v after the crash: the lease ran out (TTL %v), then its next try (retry %v) won",
		s.leader, e.Holder, since(began), ttl, retry)
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
	if err := s.awaitPrinted(ctx, events.Revoked, s.lock(), s.leader); err != nil {
		return err
	}
	s.tl.note("%s took over %v after the resignation: woken by the release, not by its retry timer", e.Holder, since(began))
	s.leader = e.Holder
	return nil
}

// slowConsumer shows that a reader who never reads does not keep a term
// alive: revocation is on time whatever the channel holds.
func (s *stage) slowConsumer(ctx context.Context) error {
	link := hustingstest.NewCrashable(s.b)
	c, err := campaign.New(link, s.prefix+"/nightly", campaign.WithID("foxtrot"), campaign.WithTTL(ttl), campaign.WithRetry(retry))
	if err != nil {
		return err
	}
	s.register(c)
	s.wg.Go(func() { _ = c.Run(ctx) }) // nobody ever reads c.Events()
	s.closers = append(s.closers, closer{func() bool { return c.State().Leader }, func() { c.Close() }})
	if err := waitUntil(ctx, func() bool { return c.State().Leader }); err != nil {
		return err
	}
	s.tl.note("foxtrot leads another lock, and nobody reads its events (so they are not shown); it crashes too")
	link.Crash()
	s.crashed, s.crashedLinks = append(s.crashed, "foxtrot"), append(s.crashedLinks, link)
	if err := waitUntil(ctx, func() bool { return !c.State().Leader }); err != nil {
		return err
	}
	st := c.State()
	revoked := st.LastEvent
	late := revoked.Time.Sub(revoked.Deadline)
	s.tl.note("foxtrot revoked itself all the same (%s), %v after its deadline and at least %v before the backend frees the lock",
		reasonCode(revoked.Reason), late.Round(100*time.Microsecond), (ttl/10 - late).Round(time.Millisecond))
	s.tl.note("its unread channel keeps only the latest event (%d dropped): a slow reader never delays a revocation", st.Dropped)
	return nil
}

// closeAll ends the show. The crashed candidates' links refuse their calls
// from now on, as a dead host's port would: closing them does not wait out
// their hung calls (up to a TTL). Then it closes the followers, at once,
// and the leaders one by one, so that nobody takes over from a closing
// leader; then it waits for every goroutine of the show.
func (s *stage) closeAll() {
	if len(s.crashed) > 0 {
		s.tl.note("the end: every campaign closes, the leaders resigning (the crashed %s at once: their calls now fail, as a dead host's would)",
			strings.Join(s.crashed, " and "))
	} else {
		s.tl.note("the end: every campaign closes, the leaders resigning")
	}
	for _, link := range s.crashedLinks {
		link.Refuse()
	}
	var closing sync.WaitGroup
	for _, c := range s.closers {
		if !c.leading() {
			closing.Go(c.close)
		}
	}
	closing.Wait()
	for _, c := range s.closers {
		if c.leading() {
			c.close()
		}
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

// since returns the time since t, rounded for reading.
func since(t time.Time) time.Duration {
	d := time.Since(t)
	if d >= 100*time.Millisecond {
		return d.Round(time.Millisecond)
	}
	return d.Round(10 * time.Microsecond)
}
