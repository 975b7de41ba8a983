package backendtest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/group"
	"github.com/hustings/hustings/hustingstest"
	"github.com/hustings/hustings/strategy"
)

// RunGroups runs group campaigns on a backend from h.New in real time: 8
// candidates compete for 3 slots while, round after round, one leader
// crashes (its calls hang, so its session expires on the server), another
// resigns, and a new candidate replaces the crashed one. It checks that
// every slot is refilled after each round, that the backend's holders are
// the candidates that believe they lead, and, over the whole history, that
// no more than 3 terms ever overlap, no slot has two holders, and tokens
// per slot strictly increase. The candidates also rank
// themselves by strategy.FIFO through the backend's registry, so crashed
// candidates must drop out of it for slots to be refilled in time. h.Advance
// is not used; h.TTL should be a few seconds at most.
func RunGroups(t *testing.T, h Harness) {
	const candidates, slots, rounds = 8, 3, 5
	b := h.New(t)
	name := fmt.Sprintf("backendtest-groups-%x", time.Now().UnixNano())
	var hist History
	next := 0
	start := func() *groupCandidate {
		next++
		c := newGroupCandidate(t, b, name, fmt.Sprintf("g%d", next), slots, h.TTL, &hist)
		return c
	}
	var live []*groupCandidate
	for range candidates {
		live = append(live, start())
	}
	settle := h.TTL + h.TTL/2 + 10*time.Second
	for round := range rounds {
		waitFor(t, settle, fmt.Sprintf("round %d: %d slots filled", round, slots), func() bool {
			return len(leading(live)) == slots
		})
		checkHolders(t, b, name, slots, live)
		ls := leading(live)
		ls[0].crash()
		if err := ls[1].g.Resign(t.Context()); err != nil {
			t.Fatalf("round %d: Resign: %v", round, err)
		}
		for i, c := range live {
			if c == ls[0] {
				live[i] = start()
			}
		}
	}
	waitFor(t, settle, "all slots filled at the end", func() bool { return len(leading(live)) == slots })
	for _, c := range live {
		c.stop()
	}
	ts := CheckTerms(t, hist.Events(), slots)
	if len(ts) < rounds*2 {
		t.Fatalf("only %d terms in %d rounds", len(ts), rounds)
	}
}

// groupCandidate is one group campaign of RunGroups, behind its own
// Crashable.
type groupCandidate struct {
	g       *campaign.Campaign
	c       *hustingstest.Crashable
	wg      sync.WaitGroup // Run and the event follower
	ended   bool
	crashed bool
}

func newGroupCandidate(t *testing.T, b backends.Backend, name, id string, slots int, ttl time.Duration, hist *History) *groupCandidate {
	t.Helper()
	c := hustingstest.NewCrashable(b)
	opts := []campaign.Option{campaign.WithID(id), campaign.WithTTL(ttl), campaign.WithRetry(ttl / 4),
		group.WithStrategy(strategy.FIFO()), group.WithPatience(ttl)}
	g, err := group.New(c, name, slots, opts...)
	if err != nil {
		t.Fatalf("group.New: %v", err)
	}
	gc := &groupCandidate{g: g, c: c}
	gc.wg.Go(func() { _ = g.Run(context.Background()) }) // ends with Close
	gc.wg.Go(func() { hist.Follow(g.Events()) })         // ends when Run closes the channel
	t.Cleanup(gc.stop)
	return gc
}

// crash makes the candidate's backend calls hang; it stays crashed until
// the test ends (then Close gives up on its calls).
func (gc *groupCandidate) crash() {
	gc.crashed = true
	gc.c.Crash()
}

// stop closes the group campaign and waits for its events to be
// recorded; a crashed one is refused first, which closes its sessions on
// the backend (their loss watches included) and fails its hung calls.
func (gc *groupCandidate) stop() {
	if gc.ended {
		return
	}
	gc.ended = true
	if gc.crashed {
		gc.c.Refuse()
	}
	gc.g.Close()
	gc.wg.Wait()
}

func leading(cs []*groupCandidate) []*groupCandidate {
	var out []*groupCandidate
	for _, c := range cs {
		if c.g.State().Leader {
			out = append(out, c)
		}
	}
	return out
}

// checkHolders compares the backend's slot holders with the candidates'
// beliefs: each holder the backend names believes it holds that slot
// (given a moment to learn of a slot its queue position won it).
func checkHolders(t *testing.T, b backends.Backend, name string, slots int, cs []*groupCandidate) {
	t.Helper()
	byID := map[string]*groupCandidate{}
	for _, c := range cs {
		byID[c.g.State().ID] = c
	}
	waitFor(t, 10*time.Second, "backend holders match the candidates' beliefs", func() bool {
		seen := map[string]bool{}
		for i := range slots {
			h, err := b.Holder(t.Context(), fmt.Sprintf("%s/slot-%d", name, i))
			if err != nil || h.ID == "" || seen[h.ID] {
				return false
			}
			seen[h.ID] = true
			c := byID[h.ID]
			if c == nil {
				return false
			}
			s := c.g.State()
			if !s.Leader || s.Slot != i || s.Token != h.Token {
				return false
			}
		}
		return true
	})
}

// waitFor polls cond every 20 ms until it holds, failing after limit.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not so after %v", what, limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
