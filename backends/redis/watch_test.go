package redis_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/redis"
	"github.com/hustings/hustings/backends/redis/redistest"
	"github.com/hustings/hustings/internal/testserver"
)

// subscribers returns how many connections Redis counts as subscribed
// to a channel, and to how many channels in all.
func subscribers(t *testing.T, c *goredis.Client) (conns, channels int) {
	t.Helper()
	list, err := c.ClientList(t.Context()).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(list, "\n") {
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "sub="); ok {
				if n, _ := strconv.Atoi(v); n > 0 {
					conns, channels = conns+1, channels+n
				}
			}
		}
	}
	return conns, channels
}

// TestWatchesShareOneConnection: 200 watches of one Backend, on 100 names,
// cost Redis one connection between them; a release wakes the watches of
// its name only; the connection goes once the last watch ends, and a new
// watch afterwards works.
func TestWatchesShareOneConnection(t *testing.T) {
	srv := redistest.Start(t)
	admin := redistest.Client(t, srv.Addr())
	b, err := redis.New(redistest.Client(t, srv.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	chans := map[string][]<-chan struct{}{}
	for i := range 200 {
		name := fmt.Sprintf("w%d", i%100)
		ch, err := b.Watch(ctx, name)
		if err != nil {
			t.Fatalf("Watch %d: %v", i, err)
		}
		chans[name] = append(chans[name], ch)
	}
	if conns, channels := subscribers(t, admin); conns != 1 || channels != 100 {
		t.Fatalf("200 watches on 100 names: %d subscribed connections, %d channels; want 1 and 100", conns, channels)
	}
	s, err := b.Open(t.Context(), "a", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := s.Acquire(t.Context(), "w7", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range chans["w7"] {
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatal("a watch of w7 was not woken by its acquire")
		}
	}
	if err := s.Release(t.Context(), "w7", tok, 0); err != nil {
		t.Fatal(err)
	}
	for _, ch := range chans["w7"] {
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatal("a watch of w7 was not woken by its release")
		}
	}
	for _, ch := range chans["w8"] {
		select {
		case <-ch:
			t.Fatal("a watch of w8 was woken by w7")
		default:
		}
	}
	// A watch on a name of its own: its channel is left when it ends, the
	// others stay.
	soloCtx, soloCancel := context.WithCancel(t.Context())
	if _, err := b.Watch(soloCtx, "solo"); err != nil {
		t.Fatal(err)
	}
	if _, channels := subscribers(t, admin); channels != 101 {
		t.Fatalf("%d channels with solo's watch, want 101", channels)
	}
	soloCancel()
	testserver.Eventually(t, "solo's channel left when its watch ended", 10*time.Second, func() bool {
		conns, channels := subscribers(t, admin)
		return conns == 1 && channels == 100
	})
	cancel()
	for name, cs := range chans {
		for _, ch := range cs {
			if _, ok := <-ch; ok {
				t.Fatalf("watch of %s still open after its ctx ended", name)
			}
		}
	}
	testserver.Eventually(t, "no subscribed connection after every watch ended", 10*time.Second, func() bool {
		conns, _ := subscribers(t, admin)
		return conns == 0
	})
	ch, err := b.Watch(t.Context(), "w1")
	if err != nil {
		t.Fatalf("Watch after the connection closed: %v", err)
	}
	if _, err := s.Acquire(t.Context(), "w1", 0); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("a new watch was not woken")
	}
	s.Close(t.Context())
}

// TestWatchReleasesWakesWaitersOnly: a release watch is not woken when the
// lock is taken, nor by the release of a holder nobody tried to take it
// from, and is woken by a release after another session's Acquire found
// the lock held.
func TestWatchReleasesWakesWaitersOnly(t *testing.T) {
	srv := redistest.Start(t)
	b, err := redis.New(redistest.Client(t, srv.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	var _ interface {
		WatchReleases(context.Context, string) (<-chan struct{}, error)
	} = b // what the engine's waiters look for
	holder, err := b.Open(t.Context(), "holder", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(context.Background())
	waiter, err := b.Open(t.Context(), "waiter", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer waiter.Close(context.Background())
	ch, err := b.WatchReleases(t.Context(), "job")
	if err != nil {
		t.Fatal(err)
	}
	tok, err := holder.Acquire(t.Context(), "job", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Release(t.Context(), "job", tok, 0); err != nil {
		t.Fatal(err)
	}
	if tok, err = holder.Acquire(t.Context(), "job", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := waiter.Acquire(t.Context(), "job", 0); !errors.Is(err, backends.ErrHeld) {
		t.Fatalf("waiter's Acquire = %v, want ErrHeld", err)
	}
	if err := holder.Release(t.Context(), "job", tok, 0); err != nil {
		t.Fatal(err)
	}
	// Messages arrive in order on the one connection: the first signal is
	// the release the waiter asked for, and none came before it.
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("the release after a failed Acquire woke no release watch")
	}
	if tok, err = holder.Acquire(t.Context(), "job", 0); err != nil {
		t.Fatal(err)
	}
	if err := holder.Release(t.Context(), "job", tok, 0); err != nil {
		t.Fatal(err)
	}
	// A plain watch sees every change; once it has seen that last release,
	// the release watch would have had its signal too.
	all, err := b.Watch(t.Context(), "job")
	if err != nil {
		t.Fatal(err)
	}
	if tok, err = holder.Acquire(t.Context(), "job", 0); err != nil {
		t.Fatal(err)
	}
	<-all
	select {
	case <-ch:
		t.Fatal("a release watch was woken by a take or a release nobody waited for")
	default:
	}
}
