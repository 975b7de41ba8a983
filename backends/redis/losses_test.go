package redis_test

import (
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/hustings/hustings/backends/redis"
	"github.com/hustings/hustings/backends/redis/redistest"
	"github.com/hustings/hustings/internal/testserver"
)

// TestTakeOverIsPushed: a lock held across a renewal, then deleted behind
// its holder's back (a DEL, as an eviction would) and taken by a
// candidate of another process, goes to the holder's Lost, and its Losses
// signals, with no KeepAlive after the delete. A lock the holder released
// itself, and one it took again itself, are not lost.
func TestTakeOverIsPushed(t *testing.T) {
	srv := redistest.Start(t)
	client := redistest.Client(t, srv.Addr())
	b := newBackend(t, srv.Addr())
	ctx := t.Context()
	a := openSession(t, b, "a", time.Hour)
	losses := a.Losses()
	tok, err := a.Acquire(ctx, "taken", 0)
	if err != nil {
		t.Fatal(err)
	}
	released, err := a.Acquire(ctx, "released", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.KeepAlive(ctx); err != nil {
		t.Fatal(err)
	}
	subscribed(t, client, redis.Channel(b, "taken"))
	subscribed(t, client, redis.Channel(b, "released"))
	if err := a.Release(ctx, "released", released, 0); err != nil {
		t.Fatal(err)
	}
	if again, err := a.Acquire(ctx, "taken", 0); err != nil || again != tok {
		t.Fatalf("Acquire of a held lock again = %d, %v; want %d", again, err, tok)
	}

	deleteLock(t, client, b, "taken")
	other := openSession(t, newBackend(t, srv.Addr()), "b", time.Hour)
	if _, err := other.Acquire(ctx, "taken", 0); err != nil {
		t.Fatalf("b's Acquire after the delete: %v", err)
	}
	select {
	case <-losses:
	case <-time.After(10 * time.Second):
		t.Fatal("no signal on Losses within 10s of the take-over")
	}
	if lost := a.Lost(); len(lost) != 1 || lost["taken"] != tok {
		t.Fatalf("Lost() = %v after the take-over, with no KeepAlive; want only taken:%d", lost, tok)
	}
}

// TestLossWatchFollowsTheLocks: the loss watch subscribes to the channel
// of each lock the session held across a renewal (a lock acquired and
// released between two costs none), drops the subscription at the renewal
// after the lock's release, and every subscription once the session is
// closed.
func TestLossWatchFollowsTheLocks(t *testing.T) {
	srv := redistest.Start(t)
	client := redistest.Client(t, srv.Addr())
	b := newBackend(t, srv.Addr())
	ctx := t.Context()
	s := openSession(t, b, "a", time.Hour)
	s.Losses()
	x, err := s.Acquire(ctx, "x", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Acquire(ctx, "y", 0); err != nil {
		t.Fatal(err)
	}
	short, err := s.Acquire(ctx, "short", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, "short", short, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.KeepAlive(ctx); err != nil {
		t.Fatal(err)
	}
	subscribed(t, client, redis.Channel(b, "x"))
	subscribed(t, client, redis.Channel(b, "y"))
	if n := numSub(t, client, redis.Channel(b, "short")); n != 0 {
		t.Fatalf("%d subscribers of a lock released before the renewal, want 0", n)
	}
	if err := s.Release(ctx, "x", x, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.KeepAlive(ctx); err != nil {
		t.Fatal(err)
	}
	unsubscribed(t, client, redis.Channel(b, "x"))
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	unsubscribed(t, client, redis.Channel(b, "y"))
}

// subscribed waits until Redis counts a subscriber of channel.
func subscribed(t *testing.T, client *goredis.Client, channel string) {
	t.Helper()
	testserver.Eventually(t, channel+" subscribed", 10*time.Second, func() bool { return numSub(t, client, channel) > 0 })
}

// unsubscribed waits until Redis counts no subscriber of channel.
func unsubscribed(t *testing.T, client *goredis.Client, channel string) {
	t.Helper()
	testserver.Eventually(t, channel+" unsubscribed", 10*time.Second, func() bool { return numSub(t, client, channel) == 0 })
}

// numSub returns how many subscribers Redis counts for channel.
func numSub(t *testing.T, client *goredis.Client, channel string) int64 {
	t.Helper()
	n, err := client.PubSubNumSub(t.Context(), channel).Result()
	if err != nil {
		t.Fatalf("PUBSUB NUMSUB %s: %v", channel, err)
	}
	return n[channel]
}
