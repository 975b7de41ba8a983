package group_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/group"
	"github.com/hustings/hustings/strategy"
)

type countingReg struct {
	*memory.Backend
	members atomic.Int64
}

func (c *countingReg) Members(ctx context.Context, g string) ([]strategy.Candidate, error) {
	c.members.Add(1)
	return c.Backend.Members(ctx, g)
}

// G1: one registry entry the strategy rejects (weight 0, e.g. a replica
// still on FIFO during a rolling deploy) makes judge fail; ranked() then
// leaves tryAt and fresh as they were, so startTry ranks again at once:
// a rank op per loop iteration, and the candidate never tries, even
// though both slots are free.
func TestUnrankableMemberNeitherStormsNorBlocks(t *testing.T) {
	// real time: under synctest the storm never lets the bubble idle.
	b := &countingReg{Backend: memory.New()}
	other, _ := b.Backend.Open(t.Context(), "old-replica", time.Hour)
	if _, err := other.(backends.Registrar).Register(t.Context(), "rollups", strategy.Candidate{ID: "old-replica"}); err != nil {
		t.Fatal(err)
	}
	g, err := group.New(b, "rollups", 2, campaign.WithID("n1"), campaign.WithRetry(50*time.Millisecond), group.WithStrategy(strategy.Weighted()), group.WithWeight(1))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- g.Run(context.Background()) }()
	time.Sleep(500 * time.Millisecond)
	n := b.members.Load()
	if n > 20 {
		t.Errorf("%d registry reads in 500ms with a 50ms retry: rank storm", n)
	}
	if !g.State().Leader {
		t.Errorf("never elected although both slots have been free for 500ms (patience 100ms); state err: %v", g.State().Err)
	}
	g.Close()
	<-done
	other.Close(t.Context())
}

// G2: a group on a shared Candidate stays registered in the backend's
// registry after it is closed (deregister only runs for WithRegistry), as
// long as the candidate's session lives. With preemption, a holder is
// out-ranked by the ghost and gives its slot up again and again.
func TestClosedSharedGroupLeavesTheRegistry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		cand, _ := campaign.NewSession(b, campaign.WithID("ghost"), campaign.WithTTL(10*time.Second))
		cd := make(chan error, 1)
		go func() { cd <- cand.Run(context.Background()) }()
		opts := []campaign.Option{group.WithStrategy(strategy.FIFO()), group.WithPreemption(3 * time.Second)}
		gg, _ := group.New(b, "rollups", 2, append(opts, campaign.WithSession(cand))...)
		gd := make(chan error, 1)
		go func() { gd <- gg.Run(context.Background()) }()
		time.Sleep(time.Second)
		gg.Close()
		<-gd
		if ms, _ := b.Members(t.Context(), "rollups"); len(ms) != 0 {
			t.Errorf("closed group still registered: %v", ms)
		}
		var gs []*campaign.Campaign
		var ds []chan error
		for _, id := range []string{"b", "c", "d"} {
			g, _ := group.New(b, "rollups", 2, append(opts, campaign.WithID(id))...)
			d := make(chan error, 1)
			go func() { d <- g.Run(context.Background()) }()
			gs, ds = append(gs, g), append(ds, d)
			time.Sleep(10 * time.Millisecond)
		}
		var elected atomic.Int64
		for _, g := range gs {
			go func() {
				for e := range g.Events() {
					if e.Kind == events.Elected {
						elected.Add(1)
					}
				}
			}()
		}
		time.Sleep(2 * time.Minute)
		if n := elected.Load(); n > 4 {
			t.Errorf("%d terms started in 2 minutes among 3 live candidates for 2 slots: preemption flapping caused by a ghost entry", n)
		}
		for i, g := range gs {
			g.Close()
			<-ds[i]
		}
		cand.Close()
		<-cd
	})
}

type kaCount struct {
	*memory.Backend
	n map[string]*atomic.Int64
}
type kaSess struct {
	backends.Session
	n *atomic.Int64
}

func (k *kaCount) Open(ctx context.Context, id string, ttl time.Duration) (backends.Session, error) {
	s, err := k.Backend.Open(ctx, id, ttl)
	if err != nil {
		return nil, err
	}
	return &kaSess{s, k.n[id]}, nil
}
func (s *kaSess) KeepAlive(ctx context.Context) error { s.n.Add(1); return s.Session.KeepAlive(ctx) }
func (s *kaSess) Register(ctx context.Context, g string, c strategy.Candidate) (strategy.Candidate, error) {
	return s.Session.(backends.Registrar).Register(ctx, g, c)
}
func (s *kaSess) Deregister(ctx context.Context, g string) error {
	return s.Session.(backends.Registrar).Deregister(ctx, g)
}

// A candidate the strategy does not prefer waits for its next rank
// without trying; its session must still be renewed on time meanwhile.
// (Found in review: the wait's wake-up replaced the renewal's, so the
// session was renewed only when the next rank was due; with a retry longer
// than the TTL it expired, and the candidate dropped out of the registry
// again and again.)
func TestIneligibleWaitKeepsRenewing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := &kaCount{Backend: memory.New(), n: map[string]*atomic.Int64{"a": {}, "b": {}, "c": {}}}
		opts := []campaign.Option{campaign.WithTTL(3 * time.Second), campaign.WithRetry(6 * time.Second), group.WithStrategy(strategy.FIFO()), group.WithPatience(time.Hour)}
		var gs []*campaign.Campaign
		var ds []chan error
		for _, id := range []string{"a", "b", "c"} {
			g, _ := group.New(k, "rollups", 2, append(opts, campaign.WithID(id))...)
			d := make(chan error, 1)
			go func() { d <- g.Run(context.Background()) }()
			gs, ds = append(gs, g), append(ds, d)
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(5 * time.Second)
		before := k.n["c"].Load()
		missing := 0
		for range 30 {
			time.Sleep(time.Second)
			ms, _ := k.Members(t.Context(), "rollups")
			found := false
			for _, m := range ms {
				found = found || m.ID == "c"
			}
			if !found {
				missing++
			}
		}
		if n := k.n["c"].Load() - before; n < 20 {
			t.Errorf("c renewed its session %d times in 30s with a 1s keep-alive interval", n)
		}
		if missing > 0 {
			t.Errorf("c was missing from the registry in %d of 30 samples: its session expired", missing)
		}
		for i, g := range gs {
			g.Close()
			<-ds[i]
		}
	})
}
