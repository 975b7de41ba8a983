package group_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/backendtest"
	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/group"
	"github.com/hustings/hustings/strategy"
)

// holders returns the sorted IDs of the members that lead.
func holders(ms []*member) []string {
	var ids []string
	for _, m := range leaders(ms) {
		ids = append(ids, m.g.State().ID)
	}
	slices.Sort(ids)
	return ids
}

func TestStrategyPicksTheTopN(t *testing.T) {
	tests := []struct {
		name string
		s    strategy.Strategy
		opts func(i int) []campaign.Option
		want func(cs []strategy.Candidate) []string
	}{
		{"score", strategy.Score(),
			func(i int) []campaign.Option { return []campaign.Option{group.WithScore(float64((i * 7) % 5))} },
			nil},
		{"fifo", strategy.FIFO(), func(int) []campaign.Option { return nil }, nil},
		{"weighted", strategy.Weighted(),
			func(i int) []campaign.Option { return []campaign.Option{group.WithWeight(float64(i + 1))} },
			nil},
		{"random", strategy.Random(), func(int) []campaign.Option { return nil }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := memory.New()
				var h backendtest.History
				var ms []*member
				for i := range 5 {
					opts := append(tt.opts(i), group.WithStrategy(tt.s), group.WithPatience(time.Hour), group.WithPreemption(3*time.Second))
					ms = append(ms, join(t, b, fmt.Sprintf("n%d", i), 2, &h, opts...))
					synctest.Wait() // registered before the next joins: registration order = i
				}
				time.Sleep(30 * time.Second)
				synctest.Wait()
				members, err := b.Members(t.Context(), "rollups")
				if err != nil {
					t.Fatal(err)
				}
				ranked, err := tt.s.Rank("rollups", 0, members)
				if err != nil {
					t.Fatal(err)
				}
				want := []string{ranked[0].ID, ranked[1].ID}
				slices.Sort(want)
				if got := holders(ms); !slices.Equal(got, want) {
					t.Fatalf("holders %v, want the strategy's top 2 %v (ranking %v)", got, want, ranked)
				}
				for _, m := range ms {
					m.stop(t)
				}
			})
		})
	}
}

func TestPreemptionMovesTheSlotOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		var h backendtest.History
		opts := func(score float64) []campaign.Option {
			return []campaign.Option{group.WithStrategy(strategy.Score()), group.WithScore(score),
				group.WithPreemption(5 * time.Second), group.WithPatience(time.Hour)}
		}
		var ms []*member
		for _, c := range []struct {
			id    string
			score float64
		}{{"hi", 10}, {"mid", 5}, {"lo", 1}} {
			ms = append(ms, join(t, b, c.id, 2, &h, opts(c.score)...))
			synctest.Wait() // registered and settled before the next joins
		}
		time.Sleep(20 * time.Second)
		synctest.Wait()
		if got := holders(ms); !slices.Equal(got, []string{"hi", "mid"}) {
			t.Fatalf("holders %v, want hi and mid", got)
		}
		if err := ms[2].g.SetScore(7); err != nil { // lo now out-ranks mid
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if got := holders(ms); !slices.Equal(got, []string{"hi", "lo"}) {
			t.Fatalf("holders %v after lo's score rose above mid's, want hi and lo", got)
		}
		// The slot moved once: mid resigned once, and nobody else did.
		resigned := 0
		for _, e := range h.Events() {
			if e.Kind == events.Revoked {
				resigned++
				if e.Holder != "mid" || !errors.Is(e.Reason, events.ErrResigned) {
					t.Errorf("unexpected revocation %s", e)
				}
			}
		}
		if resigned != 1 {
			t.Fatalf("%d revocations, want exactly one (mid yielding to lo)", resigned)
		}
		for _, m := range ms {
			m.stop(t)
		}
	})
}

func TestPatienceLetsTheNextRankedIn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		// A registered candidate with the top score that never takes a
		// slot: the preferred candidate is not coming.
		ghost := ghostCandidate(t, b, 100)
		defer ghost()
		var h backendtest.History
		opts := func(score float64) []campaign.Option {
			return []campaign.Option{group.WithStrategy(strategy.Score()), group.WithScore(score), group.WithPatience(20 * time.Second)}
		}
		began := time.Now()
		ms := []*member{join(t, b, "a", 2, &h, opts(5)...)}
		synctest.Wait() // a registered and holds a slot before b joins
		ms = append(ms, join(t, b, "b", 2, &h, opts(1)...))
		synctest.Wait()
		if got := holders(ms); !slices.Equal(got, []string{"a"}) {
			t.Fatalf("holders %v at once, want only a (ghost and a are the top 2)", got)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if got := holders(ms); !slices.Equal(got, []string{"a", "b"}) {
			t.Fatalf("holders %v after the patience ran out, want a and b", got)
		}
		var bAt time.Time
		for _, e := range h.Events() {
			if e.Holder == "b" && e.Kind == events.Elected {
				bAt = e.Time
			}
		}
		if waited := bAt.Sub(began); waited < 20*time.Second {
			t.Fatalf("b took the free slot after %v, before the 20s patience", waited)
		}
		for _, m := range ms {
			m.stop(t)
		}
	})
}

// countingReg is a memory backend that counts the registry reads; the
// thousandth closes storm, if not nil: reads without pause never let a
// synctest bubble's clock move, so a test waits on storm as well.
type countingReg struct {
	*memory.Backend
	members atomic.Int64
	storm   chan struct{}
}

func (c *countingReg) Members(ctx context.Context, g string) ([]strategy.Candidate, error) {
	if c.members.Add(1) == 1000 && c.storm != nil {
		close(c.storm)
	}
	return c.Backend.Members(ctx, g)
}

// A registry entry the strategy cannot rank (weight 0 under Weighted: a
// replica still on FIFO during a rolling deploy) neither makes a
// candidate read the registry without pause nor keeps it from trying:
// with both slots free it is elected, reading the registry about once a
// retry interval.
func TestUnrankableMemberNeitherStormsNorBlocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &countingReg{Backend: memory.New(), storm: make(chan struct{})}
		other, err := b.Backend.Open(t.Context(), "old-replica", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := other.Register(t.Context(), "rollups", strategy.Candidate{ID: "old-replica"}); err != nil {
			t.Fatal(err)
		}
		g := run(t, newGroup(t, b, 2, campaign.WithID("n1"), campaign.WithRetry(50*time.Millisecond), group.WithStrategy(strategy.Weighted()), group.WithWeight(1)))
		select {
		case <-time.After(500 * time.Millisecond):
		case <-b.storm: // the clock cannot move: the registry is read without pause
		}
		n := b.members.Load()
		if n > 20 {
			t.Errorf("%d registry reads in 500ms with a 50ms retry: rank storm", n)
		}
		if !g.g.State().Leader {
			t.Errorf("never elected although both slots have been free for 500ms (patience 100ms); state err: %v", g.g.State().Err)
		}
		g.stop(t)
		if err := other.Close(t.Context()); err != nil {
			t.Error(err)
		}
	})
}

// ghostCandidate registers a candidate that keeps its session alive and
// never campaigns; the returned func ends it.
func ghostCandidate(t *testing.T, b *memory.Backend, score float64) func() {
	t.Helper()
	s, err := b.Open(t.Context(), "ghost", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Register(t.Context(), "rollups", strategy.Candidate{Score: score}); err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := s.Close(t.Context()); err != nil {
			t.Error(err)
		}
	}
}

func TestStrategyInputErrors(t *testing.T) {
	b := memory.New()
	tests := []struct {
		name string
		b    backends.Backend
		opts []campaign.Option
	}{
		{"weighted without weight", b, []campaign.Option{group.WithStrategy(strategy.Weighted())}},
		{"negative weight", b, []campaign.Option{group.WithStrategy(strategy.Weighted()), group.WithWeight(-1)}},
		{"negative preemption", b, []campaign.Option{group.WithStrategy(strategy.Score()), group.WithPreemption(-1)}},
		{"nil strategy", b, []campaign.Option{group.WithStrategy(nil)}},
		{"nil registry", b, []campaign.Option{group.WithStrategy(strategy.FIFO()), group.WithRegistry(nil)}},
		{"typed nil registry", b, []campaign.Option{group.WithStrategy(strategy.FIFO()), group.WithRegistry((*mapRegistry)(nil))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := group.New(tt.b, "g", 3, tt.opts...); !errors.Is(err, campaign.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
		})
	}
	g, err := group.New(b, "g", 3, group.WithStrategy(strategy.Score()))
	if err != nil {
		t.Fatal(err)
	}
	if err := g.SetScore(nanScore()); !errors.Is(err, campaign.ErrInvalid) {
		t.Fatalf("SetScore(NaN) = %v, want ErrInvalid", err)
	}
	closeOK(t, g)
}

// noRegistry is a backend whose registry fails, so that a test passes
// only if the campaigns rank through the registry they were given.
type noRegistry struct{ backends.Backend }

func (noRegistry) Members(context.Context, string) ([]strategy.Candidate, error) {
	return nil, errors.New("test: the backend's registry was used")
}

func nanScore() float64 { var z float64; return z / z }

// mapRegistry is a registry outside the backend, as gossip would be.
type mapRegistry struct {
	mu        sync.Mutex
	entries   map[string]strategy.Candidate
	order     uint64
	fail      error // returned by Register when set
	registers int
}

func (r *mapRegistry) Members(_ context.Context, group string) ([]strategy.Candidate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []strategy.Candidate
	for _, c := range r.entries {
		out = append(out, c)
	}
	return out, nil
}

func (r *mapRegistry) Register(_ context.Context, group string, c strategy.Candidate) (strategy.Candidate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.registers++
	if r.fail != nil {
		return strategy.Candidate{}, r.fail
	}
	if old, ok := r.entries[c.ID]; ok {
		c.Order = old.Order
	} else {
		r.order++
		c.Order = r.order
	}
	r.entries[c.ID] = c
	return c, nil
}

// Deregister removes every entry: the tests use one candidate per registry
// when they check it.
func (r *mapRegistry) Deregister(_ context.Context, group string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	clear(r.entries)
	return nil
}

func TestCustomRegistryFailuresPauseAndCloseDeregisters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		failing := &mapRegistry{entries: map[string]strategy.Candidate{}, fail: errors.New("registry down")}
		var h backendtest.History
		m := join(t, b, "a", 2, &h, group.WithRegistry(failing), group.WithStrategy(strategy.FIFO()))
		time.Sleep(10 * time.Second)
		failing.mu.Lock()
		n := failing.registers
		failing.mu.Unlock()
		if n > 20 {
			t.Fatalf("%d registrations in 10s with a 500ms retry: failures are retried without a pause", n)
		}
		if !m.g.State().Leader {
			t.Fatal("a failing registry kept the only candidate from leading")
		}
		m.stop(t)

		ok := &mapRegistry{entries: map[string]strategy.Candidate{}}
		m = join(t, b, "b", 2, &h, group.WithRegistry(ok), group.WithStrategy(strategy.FIFO()))
		synctest.Wait()
		if got := members(t, ok, "rollups"); len(got) != 1 {
			t.Fatalf("registry lists %v while b runs, want b", got)
		}
		m.stop(t)
		if got := members(t, ok, "rollups"); len(got) != 0 {
			t.Fatalf("registry still lists %v after Close", got)
		}
	})
}

func TestCustomRegistry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := noRegistry{memory.New()}
		reg := &mapRegistry{entries: map[string]strategy.Candidate{}}
		var h backendtest.History
		var ms []*member
		for i, score := range []float64{3, 9, 1, 7} {
			ms = append(ms, join(t, b, fmt.Sprintf("n%d", i), 2, &h, group.WithRegistry(reg),
				group.WithStrategy(strategy.Score()), group.WithScore(score), group.WithPreemption(2*time.Second)))
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if got := holders(ms); !slices.Equal(got, []string{"n1", "n3"}) {
			t.Fatalf("holders %v, want the top scorers n1 and n3", got)
		}
		for _, m := range ms {
			m.stop(t)
		}
	})
}
