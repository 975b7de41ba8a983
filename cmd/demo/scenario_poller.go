package main

// Scenario "poller": a webhook provider that can only be polled, and three
// replicas that must not poll it at once (each poll would fetch the same
// deliveries). The leader polls under WhileLeader; when it shuts down, its
// term's context ends, its poll loop returns, and only then is the lock
// released, so the next leader's first poll comes after the last one of
// the old leader: the polls hand over without ever overlapping.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
)

const (
	pollerTTL       = time.Second
	pollerRetry     = 100 * time.Millisecond
	pollerInterval  = 100 * time.Millisecond // between polls
	pollerFetch     = 20 * time.Millisecond  // one poll's round trip
	pollerPerLeader = 3                      // polls each leader makes before it shuts down
)

// pollerLog records every poll, and how many ran at once.
type pollerLog struct {
	mu      sync.Mutex
	polls   []pollerPoll
	active  int
	overlap int // the most polls that ran at once; the scenario promises 1
}

type pollerPoll struct {
	id    string
	token events.Token
}

// poll is one request to the provider, by the leader of term.
func (l *pollerLog) poll(term events.Event) {
	l.mu.Lock()
	l.active++
	l.overlap = max(l.overlap, l.active)
	l.polls = append(l.polls, pollerPoll{term.Holder, term.Token})
	l.mu.Unlock()
	time.Sleep(pollerFetch) // the request; a real one would take ctx
	l.mu.Lock()
	l.active--
	l.mu.Unlock()
}

// last returns the latest poll and how many its term made.
func (l *pollerLog) last() (pollerPoll, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.polls) == 0 {
		return pollerPoll{}, 0
	}
	p, n := l.polls[len(l.polls)-1], 0
	for _, q := range l.polls {
		if q.token == p.token {
			n++
		}
	}
	return p, n
}

// loop is the leader's work: poll every interval until the term ends.
func (l *pollerLog) loop(ctx context.Context, term events.Event) error {
	t := time.NewTicker(pollerInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil // the term ended: no more polls from this replica
		case <-t.C:
			l.poll(term)
		}
	}
}

func pollerScenario(ctx context.Context, env *scenarioEnv) error {
	b, closeBackend, err := env.backend.open(ctx)
	if err != nil {
		return err
	}
	defer closeBackend()
	name := fmt.Sprintf("scenario-poller-%x/webhook-poller", time.Now().UnixNano())
	tally := &pollerLog{}
	var wg sync.WaitGroup
	defer wg.Wait()
	ids := []string{"alpha", "bravo", "charlie"}
	replicas := map[string]*campaign.Campaign{}
	for _, id := range ids {
		c, err := campaign.New(b, name, campaign.WithID(id), campaign.WithTTL(pollerTTL), campaign.WithRetry(pollerRetry))
		if err != nil {
			return err
		}
		replicas[id] = c
		defer c.Close()
		sub := c.Subscribe(ctx) // printed as they happen, even while a term winds down
		wg.Go(func() {
			for e := range sub {
				env.tl.event(e)
			}
		})
		wg.Go(func() { _ = campaign.WhileLeader(ctx, c, tally.loop) })
	}
	env.tl.note("three replicas; only the leader polls the webhook provider, every %v", pollerInterval)
	env.tl.header()

	// Let each leader poll a few times, then shut it down, until every
	// replica has had a turn.
	var leaders []string
	for range ids {
		if err := waitUntil(ctx, func() bool {
			p, n := tally.last()
			return n >= pollerPerLeader && !slices.Contains(leaders, p.id) // a new leader's
		}); err != nil {
			return fmt.Errorf("poller: no leader polled %d times: %w", pollerPerLeader, err)
		}
		p, n := tally.last()
		leaders = append(leaders, p.id)
		env.tl.note("%s has polled %d times under token %d; it shuts down: its poll in flight ends, then it lets go of the lock", p.id, n, p.token)
		if err := replicas[p.id].Close(); err != nil && !errors.Is(err, campaign.ErrClosed) {
			return err
		}
	}
	return pollerVerdict(env.tl, tally, leaders)
}

// pollerVerdict fails unless every replica polled in turn and no two polls
// ever ran at once.
func pollerVerdict(tl *timeline, tally *pollerLog, leaders []string) error {
	tally.mu.Lock()
	defer tally.mu.Unlock()
	var handovers []string
	for i, p := range tally.polls[1:] {
		if prev := tally.polls[i]; p.token != prev.token {
			handovers = append(handovers, fmt.Sprintf("%s→%s at poll #%d", prev.id, p.id, i+2))
		}
	}
	tl.note("%d polls by %v; handovers %v; at most %d poll(s) at once", len(tally.polls), leaders, handovers, tally.overlap)
	if tally.overlap != 1 || len(handovers) != len(leaders)-1 {
		return fmt.Errorf("poller: %d polls at once and %d handovers; want 1 and %d", tally.overlap, len(handovers), len(leaders)-1)
	}
	return nil
}
