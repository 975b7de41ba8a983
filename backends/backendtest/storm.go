package backendtest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
)

// StormTTL is the session TTL of RunStorm: short, so that a session whose
// keep-alives starve behind acquires expires within the storm.
const StormTTL = 3 * time.Second

// StormCampaigns is how many campaigns RunStorm starts when asked for 0.
// Started with Session.Campaign they cost no goroutine while they wait for
// their turn or hold, so the race detector's limit of 8,128 live
// goroutines does not bound them; a backend whose every renewal costs the
// server work per lock held may ask for fewer (etcd and PostgreSQL ask
// for 2,000). bench's scale workload also holds 100,000.
const StormCampaigns = 10_000

// stormBound is how long RunStorm waits for every campaign to be elected,
// and then for every lock to be free after they closed. It is generous
// (the target, in bench, is 30 s for 10,000 campaigns): the check is that
// a storm recovers, not how fast.
const stormBound = 3 * time.Minute

// RunStorm starts n campaigns (StormCampaigns if n is 0) on one shared
// session on a backend from h.New, each for its own lock, all at once,
// with a TTL of StormTTL, and checks that the start-up storm does not
// collapse: every campaign is elected, every one still leads a TTL later
// (the session's keep-alives did not starve behind the acquires), and
// once the campaigns are closed and the session with them, the backend
// holds none of the locks (no acquire the server applied after the
// client gave up on it was leaked). h.Advance is not used.
func RunStorm(t *testing.T, h Harness, n int) {
	if n <= 0 {
		n = StormCampaigns
	}
	b := h.New(t)
	prefix := fmt.Sprintf("backendtest-storm-%x", time.Now().UnixNano())
	cand, err := campaign.NewSession(b, campaign.WithID("storm"), campaign.WithTTL(StormTTL))
	if err != nil {
		t.Fatalf("NewSession: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var cs []*campaign.Campaign
	stop := sync.OnceFunc(func() {
		cancel()
		for _, c := range cs {
			c.Close()
		}
		cand.Close()
		wg.Wait()
	})
	t.Cleanup(stop)
	start := time.Now()
	wg.Go(func() { _ = cand.Run(ctx) })
	for i := range n {
		c, err := cand.Campaign(fmt.Sprintf("%s/%d", prefix, i))
		if err != nil {
			t.Fatalf("Campaign: %v", err)
		}
		cs = append(cs, c)
	}
	elected := awaitStormElected(t, cs, stormBound)
	t.Logf("%d campaigns on one session: all elected in %v", n, time.Since(start).Round(time.Millisecond))
	time.Sleep(StormTTL)
	for i, c := range cs {
		if s := c.State(); !s.Leader || s.Token != elected[i] {
			t.Fatalf("campaign %d of %d lost its term within a TTL of the storm: state %+v", i, n, s)
		}
	}

	stop()
	// Each round asks only for the locks not yet found free (a Holder
	// that fails now and then must not hide the others' progress); once
	// every one was, a round over all of them confirms it, so that an
	// acquire the server applied late is not missed.
	all := make([]string, n)
	for i := range all {
		all[i] = fmt.Sprintf("%s/%d", prefix, i)
	}
	pending := all
	deadline := time.Now().Add(stormBound)
	for {
		var held int
		var err error
		if pending, held, err = notFree(t, b, pending); len(pending) == 0 {
			if pending, held, err = notFree(t, b, all); len(pending) == 0 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d locks not free %v after the campaigns and their session closed: %d held, the rest unknown (Holder's last error: %v)", len(pending), n, stormBound, held, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// awaitStormElected waits for the first event of each campaign, every one
// Elected, within limit, and returns their tokens.
func awaitStormElected(t *testing.T, cs []*campaign.Campaign, limit time.Duration) []events.Token {
	t.Helper()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	tokens := make([]events.Token, len(cs))
	for i, c := range cs {
		select {
		case e := <-c.Events():
			if e.Kind != events.Elected {
				t.Fatalf("campaign %d: first event %v, want Elected", i, e)
			}
			tokens[i] = e.Token
		case <-timer.C:
			leading := 0
			for _, c := range cs {
				if c.State().Leader {
					leading++
				}
			}
			t.Fatalf("storm: %d of %d campaigns lead after %v; last error of campaign %d: %v", leading, len(cs), limit, i, c.State().Err)
		}
	}
	return tokens
}

// notFree returns the names of names whose lock the backend does not
// report free, how many of them it reports held, and the last error of a
// Holder that could not tell. It asks 32 at a time: over a slow link one
// at a time would take minutes.
func notFree(t *testing.T, b backends.Backend, names []string) ([]string, int, error) {
	var (
		mu   sync.Mutex
		out  []string
		held int
		last error
		next atomic.Int64
		wg   sync.WaitGroup
	)
	for range 32 {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(names)); i = next.Add(1) - 1 {
				h, err := b.Holder(t.Context(), names[i])
				if err == nil && h.ID == "" {
					continue
				}
				mu.Lock()
				out = append(out, names[i])
				if err != nil {
					last = fmt.Errorf("Holder(%q): %w", names[i], err)
				} else {
					held++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return out, held, last
}
