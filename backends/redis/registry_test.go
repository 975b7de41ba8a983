package redis_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/redis/redistest"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/group"
	"github.com/hustings/hustings/internal/testserver"
	"github.com/hustings/hustings/strategy"
)

// TestRegistryKeys: a group's entries are one hash, prefix:{group}:members,
// with a field per session, and its counter prefix:{group}:order; Close
// deletes the session's field, and Members deletes the fields of sessions
// that expired. The counter stays, so orders never repeat.
func TestRegistryKeys(t *testing.T) {
	srv := redistest.Start(t)
	client := redistest.Client(t, srv.Addr())
	b := newBackend(t, srv.Addr())
	ctx := t.Context()
	const group, members, counter = "a}b", "hustings:{a%7Db}:members", "hustings:{a%7Db}:order"
	register := func(s backends.Session) strategy.Candidate {
		t.Helper()
		c, err := s.Register(ctx, group, strategy.Candidate{Score: 0.1, Meta: map[string]string{"k": "v"}})
		if err != nil {
			t.Fatalf("Register: %v", err)
		}
		return c
	}
	fields := func() int64 {
		t.Helper()
		n, err := client.HLen(ctx, members).Result()
		if err != nil {
			t.Fatalf("HLEN: %v", err)
		}
		return n
	}
	closed, expiring, kept := openSession(t, b, "x", time.Minute), openSession(t, b, "y", 200*time.Millisecond), openSession(t, b, "z", time.Minute)
	first := register(closed)
	register(expiring)
	if again := register(closed); again.Order != first.Order {
		t.Fatalf("update changed the order from %d to %d", first.Order, again.Order)
	}
	last := register(kept)
	if n := fields(); n != 3 {
		t.Fatalf("%s has %d fields, want 3", members, n)
	}
	if err := closed.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if n := fields(); n != 2 {
		t.Fatalf("after Close, %s has %d fields, want 2", members, n)
	}
	waitExpired(t, client, expiring)
	got, err := b.Members(ctx, group)
	if err != nil {
		t.Fatalf("Members: %v", err)
	}
	if len(got) != 1 || got[0].ID != "z" || got[0].Order != last.Order || got[0].Score != 0.1 || got[0].Meta["k"] != "v" {
		t.Fatalf("Members = %+v, want z's entry alone", got)
	}
	if n := fields(); n != 1 {
		t.Fatalf("after Members, %s has %d fields, want 1 (the expired session's deleted)", members, n)
	}
	// Deregistering and registering again is a new registration.
	if err := kept.Deregister(ctx, group); err != nil {
		t.Fatalf("Deregister: %v", err)
	}
	if again := register(kept); again.Order <= last.Order {
		t.Fatalf("registration after Deregister got order %d, want > %d", again.Order, last.Order)
	}
	if n, err := client.Get(ctx, counter).Uint64(); err != nil || n != 4 {
		t.Fatalf("counter %s = %d, %v; want 4", counter, n, err)
	}
}

// TestRegisterLostSession: Register on a session whose key expired reports
// ErrSessionLost and leaves no entry behind.
func TestRegisterLostSession(t *testing.T) {
	srv := redistest.Start(t)
	client := redistest.Client(t, srv.Addr())
	b := newBackend(t, srv.Addr())
	ctx := t.Context()
	s := openSession(t, b, "a", 50*time.Millisecond)
	if err := s.KeepAlive(ctx); err != nil { // Open sends nothing: set the key
		t.Fatal(err)
	}
	waitExpired(t, client, s)
	_, err := s.Register(ctx, "g", strategy.Candidate{})
	if !errors.Is(err, backends.ErrSessionLost) {
		t.Fatalf("Register on an expired session = %v, want ErrSessionLost", err)
	}
	if n, err := client.Exists(ctx, "hustings:{g}:members").Result(); err != nil || n != 0 {
		t.Fatalf("members hash exists = %d, %v; want 0", n, err)
	}
	if got, err := b.Members(ctx, "g"); err != nil || len(got) != 0 {
		t.Fatalf("Members = %v, %v; want none", got, err)
	}
}

// TestScoreStrategy runs a group ranked by score on the registry, in real
// time: the two best-scored of three candidates hold the two slots, and
// when the third one's score rises above the second's, that slot moves.
func TestScoreStrategy(t *testing.T) {
	srv := redistest.Start(t)
	b := newBackend(t, srv.Addr())
	ttl := time.Second
	join := func(id string, score float64) *campaign.Campaign {
		g, err := group.New(b, "scored", 2, campaign.WithID(id), campaign.WithTTL(ttl), campaign.WithRetry(ttl/4),
			group.WithStrategy(strategy.Score()), group.WithScore(score),
			group.WithPatience(time.Hour), group.WithPreemption(ttl))
		if err != nil {
			t.Fatalf("group.New(%s): %v", id, err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			go func() {
				for range g.Events() {
				}
			}()
			_ = g.Run(context.Background())
		}()
		t.Cleanup(func() { g.Close(); <-done })
		return g
	}
	gs := []*campaign.Campaign{join("hi", 10), join("mid", 5), join("lo", 1)}
	leaders := func() []string {
		var ids []string
		for _, g := range gs {
			if g.State().Leader {
				ids = append(ids, g.State().ID)
			}
		}
		slices.Sort(ids)
		return ids
	}
	waitUntil := func(what string, want []string) {
		t.Helper()
		testserver.Eventually(t, fmt.Sprintf("%s: leaders %v", what, want), 15*time.Second, func() bool {
			return slices.Equal(leaders(), want)
		})
	}
	waitUntil("at first", []string{"hi", "mid"})
	if err := gs[2].SetScore(7); err != nil {
		t.Fatalf("SetScore: %v", err)
	}
	waitUntil("after lo's score rose above mid's", []string{"hi", "lo"})
}
