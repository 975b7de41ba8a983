package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/backendtest"
	"github.com/hustings/hustings/backends/etcd"
	"github.com/hustings/hustings/backends/etcd/etcdtest"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/group"
	"github.com/hustings/hustings/internal/testserver"
	"github.com/hustings/hustings/strategy"
)

// register registers s in group, failing the test on error.
func register(t *testing.T, s backends.Session, group string, c strategy.Candidate) strategy.Candidate {
	t.Helper()
	got, err := s.Register(t.Context(), group, c)
	if err != nil {
		t.Fatalf("%s: Register(%q): %v", s.ID(), group, err)
	}
	return got
}

// members lists group, failing the test on error.
func members(t *testing.T, b *etcd.Backend, group string) []strategy.Candidate {
	t.Helper()
	got, err := b.Members(t.Context(), group)
	if err != nil {
		t.Fatalf("Members(%q): %v", group, err)
	}
	return got
}

func ids(cs []strategy.Candidate) []string {
	out := []string{}
	for _, c := range cs {
		out = append(out, c.ID)
	}
	return out
}

// TestRegistryZombie: when the session's lease is revoked behind its back,
// its entry goes at once, and it cannot register again.
func TestRegistryZombie(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	b := newBackend(t, cli)
	zombie := open(t, b, "zombie", time.Minute)
	register(t, zombie, "g", strategy.Candidate{Score: 1})
	if _, err := cli.Revoke(t.Context(), leaseOf(t, cli)); err != nil {
		t.Fatalf("Revoke out of band: %v", err)
	}
	if got := ids(members(t, b, "g")); len(got) != 0 {
		t.Fatalf("Members after the lease was revoked = %v, want none", got)
	}
	_, err := zombie.Register(t.Context(), "g", strategy.Candidate{Score: 2})
	wantLost(t, "Register", err)
	if got := ids(members(t, b, "g")); len(got) != 0 {
		t.Fatalf("Members after the zombie's Register = %v, want none", got)
	}
	if err := zombie.Deregister(t.Context(), "g"); err != nil {
		t.Fatalf("Deregister by a lost session: %v", err)
	}
}

// TestRegistryGroupsApart: a group whose name extends another's is listed
// apart from it.
func TestRegistryGroupsApart(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	b := newBackend(t, cli)
	groups := []string{"g", "g2", "g/x", "g x"}
	for _, g := range groups {
		register(t, open(t, b, "in-"+g, time.Minute), g, strategy.Candidate{})
	}
	for _, g := range groups {
		if got := ids(members(t, b, g)); !slices.Equal(got, []string{"in-" + g}) {
			t.Errorf("Members(%q) = %v, want only in-%s", g, got, g)
		}
	}
}

// TestRegistryOrderOutlivesRestart: orders keep increasing across a server
// restart, entries keep theirs, and an entry removed and added again is
// ordered after everyone.
func TestRegistryOrderOutlivesRestart(t *testing.T) {
	srv := etcdtest.Start(t)
	cli := srv.Client(t)
	b := newBackend(t, cli)
	a, c := open(t, b, "a", time.Minute), open(t, b, "c", time.Minute)
	first := register(t, a, "g", strategy.Candidate{Meta: map[string]string{"zone": "x"}})
	if err := srv.Restart(); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	var later strategy.Candidate
	testserver.Eventually(t, "Register after the restart", 15*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		got, err := c.Register(ctx, "g", strategy.Candidate{})
		later = got
		return err == nil
	})
	if later.Order <= first.Order {
		t.Fatalf("order after the restart %d, not after %d", later.Order, first.Order)
	}
	got := members(t, b, "g")
	if !slices.Equal(ids(got), []string{"a", "c"}) || got[0].Order != first.Order || got[0].Meta["zone"] != "x" {
		t.Fatalf("Members = %+v, want a (order %d, zone x) then c", got, first.Order)
	}
	if err := a.Deregister(t.Context(), "g"); err != nil {
		t.Fatalf("Deregister: %v", err)
	}
	again := register(t, a, "g", strategy.Candidate{})
	if again.Order <= later.Order {
		t.Fatalf("order of a registered again %d, not after %d", again.Order, later.Order)
	}
	if got := ids(members(t, b, "g")); !slices.Equal(got, []string{"c", "a"}) {
		t.Fatalf("Members = %v, want c, a", got)
	}
}

// TestRegistryFailsOnForeignValue: a registry key holding something this
// backend did not write is reported, not skipped.
func TestRegistryFailsOnForeignValue(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	b := newBackend(t, cli, etcd.WithPrefix("/p/"))
	register(t, open(t, b, "a", time.Minute), "g", strategy.Candidate{})
	if _, err := cli.Put(t.Context(), "/p/member/g\x00ff", "not json"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Members(t.Context(), "g"); !errors.Is(err, backends.ErrUnavailable) {
		t.Fatalf("Members over a foreign value: %v, want ErrUnavailable", err)
	}
}

// TestGroupsRankByScore: a group ranking by score through this registry
// gives its slots to the best-scored candidates, and moves one when a
// score changes.
func TestGroupsRankByScore(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	b := newBackend(t, cli)
	name := "ranked"
	var hist backendtest.History
	var gs []*campaign.Campaign
	for i := range 4 {
		g, err := group.New(b, name, 2, campaign.WithID(fmt.Sprintf("n%d", i)), campaign.WithTTL(time.Second),
			campaign.WithRetry(250*time.Millisecond), group.WithStrategy(strategy.Score()), group.WithScore(float64(i)),
			group.WithPatience(time.Hour), group.WithPreemption(500*time.Millisecond))
		if err != nil {
			t.Fatalf("group.New: %v", err)
		}
		var wg sync.WaitGroup
		ch := g.Events()
		wg.Go(func() { _ = g.Run(context.Background()) })
		wg.Go(func() { hist.Follow(ch) })
		t.Cleanup(func() { _ = g.Close(); wg.Wait() })
		gs = append(gs, g)
	}
	leaders := func() []string {
		var out []string
		for _, g := range gs {
			if g.State().Leader {
				out = append(out, g.State().ID)
			}
		}
		return out
	}
	testserver.Eventually(t, "n2 and n3 lead", 15*time.Second, func() bool { return slices.Equal(leaders(), []string{"n2", "n3"}) })
	if err := gs[0].SetScore(10); err != nil {
		t.Fatalf("SetScore: %v", err)
	}
	testserver.Eventually(t, "n0 and n3 lead", 15*time.Second, func() bool { return slices.Equal(leaders(), []string{"n0", "n3"}) })
	got := members(t, b, name)
	byID := map[string]strategy.Candidate{}
	for i, c := range got {
		if i > 0 && c.Order <= got[i-1].Order {
			t.Fatalf("Members = %+v, not in registration order", got)
		}
		byID[c.ID] = c
	}
	if len(byID) != 4 || len(got) != 4 || byID["n0"].Score != 10 || byID["n3"].Score != 3 {
		t.Fatalf("Members = %+v, want n0 to n3 once each, n0 scored 10", got)
	}
}
