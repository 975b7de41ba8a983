package group_test

import (
	"context"
	"errors"
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

// runSession runs a shared session for id until the test's end closes it;
// Run must then return ErrClosed.
func runSession(t *testing.T, b backends.Backend, opts ...campaign.Option) *campaign.Session {
	t.Helper()
	s, err := campaign.NewSession(b, opts...)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(context.Background()) }()
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("closing the session: %v", err)
		}
		if err := <-done; !errors.Is(err, campaign.ErrClosed) {
			t.Errorf("the session's Run = %v, want ErrClosed", err)
		}
	})
	return s
}

// members lists group's registry entries on b, failing the test on an
// error.
func members(t *testing.T, b interface {
	Members(context.Context, string) ([]strategy.Candidate, error)
}, group string) []strategy.Candidate {
	t.Helper()
	ms, err := b.Members(t.Context(), group)
	if err != nil {
		t.Fatalf("Members(%s): %v", group, err)
	}
	return ms
}

// A group on a shared session leaves the registry when it is closed,
// while the session lives on. So a closed group's entry never out-ranks
// the live candidates: with preemption, they settle instead of giving a
// slot up again and again.
func TestClosedSharedGroupLeavesTheRegistry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		cand := runSession(t, b, campaign.WithID("ghost"), campaign.WithTTL(10*time.Second))
		opts := []campaign.Option{group.WithStrategy(strategy.FIFO()), group.WithPreemption(3 * time.Second)}
		gg := run(t, newGroup(t, b, 2, append(opts, campaign.WithSession(cand))...))
		time.Sleep(time.Second)
		gg.stop(t)
		if ms := members(t, b, "rollups"); len(ms) != 0 {
			t.Errorf("closed group still registered: %v", ms)
		}
		var ms []*member
		for _, id := range []string{"b", "c", "d"} {
			ms = append(ms, run(t, newGroup(t, b, 2, append(opts, campaign.WithID(id))...)))
			time.Sleep(10 * time.Millisecond)
		}
		var elected atomic.Int64
		for _, m := range ms {
			go func() {
				for e := range m.g.Events() {
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
		for _, m := range ms {
			m.stop(t)
		}
	})
}

// kaCount is a memory backend that counts the keep-alives of the sessions
// of the IDs in n.
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
	return s.Session.Register(ctx, g, c)
}
func (s *kaSess) Deregister(ctx context.Context, g string) error {
	return s.Session.Deregister(ctx, g)
}

// A candidate the strategy does not prefer waits for its next rank
// without trying, and its session is renewed on time meanwhile, also with
// a retry interval longer than the TTL: it stays in the registry.
func TestIneligibleWaitKeepsRenewing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := &kaCount{Backend: memory.New(), n: map[string]*atomic.Int64{"a": {}, "b": {}, "c": {}}}
		opts := []campaign.Option{campaign.WithTTL(3 * time.Second), campaign.WithRetry(6 * time.Second), group.WithStrategy(strategy.FIFO()), group.WithPatience(time.Hour)}
		var ms []*member
		for _, id := range []string{"a", "b", "c"} {
			ms = append(ms, run(t, newGroup(t, k, 2, append(opts, campaign.WithID(id))...)))
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(5 * time.Second)
		before := k.n["c"].Load()
		missing := 0
		for range 30 {
			time.Sleep(time.Second)
			found := false
			for _, m := range members(t, k, "rollups") {
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
		for _, m := range ms {
			m.stop(t)
		}
	})
}
