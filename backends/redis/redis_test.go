package redis_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/backendtest"
	"github.com/hustings/hustings/backends/redis"
	"github.com/hustings/hustings/backends/redis/redistest"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/faultlink"
	"github.com/hustings/hustings/internal/testserver"
)

func TestMain(m *testing.M) {
	// The driver logs each failed dial; the fault tests make many.
	goredis.SetLogger(quietLogger{})
	goleak.VerifyTestMain(m, faultlink.KnownLeaks()...)
}

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// newBackend returns a Backend on a client of addr that is closed when the
// test ends.
func newBackend(t testing.TB, addr string, opts ...redis.Option) *redis.Backend {
	t.Helper()
	b, err := redis.New(redistest.Client(t, addr), opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return b
}

func TestContract(t *testing.T) {
	srv := redistest.Start(t)
	client := redistest.Client(t, srv.Addr())
	backendtest.Run(t, backendtest.Harness{
		New: func(t *testing.T) backends.Backend { return newBackend(t, srv.Addr()) },
		TTL: time.Second,
		Delete: func(t *testing.T, b backends.Backend, name string) {
			deleteLock(t, client, b.(*redis.Backend), name)
		},
		Fence: fencedIncr,
	})
}

// TestContractCluster runs the contract suite through a ClusterClient
// against a Cluster of one node, which refuses commands and scripts over
// keys of several slots as any Cluster does: KeepAlive confirms the locks
// with a GET each instead of the confirm script.
func TestContractCluster(t *testing.T) {
	srv := redistest.Start(t, redistest.Cluster())
	client := redistest.ClusterClient(t, srv.Addr())
	backendtest.Run(t, backendtest.Harness{
		New: func(t *testing.T) backends.Backend {
			b, err := redis.New(redistest.ClusterClient(t, srv.Addr()))
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			return b
		},
		TTL: time.Second,
		Delete: func(t *testing.T, b backends.Backend, name string) {
			deleteLock(t, client, b.(*redis.Backend), name)
		},
		Fence: fencedIncr,
	})
}

// deleteLock DELs the key of lock name behind its holder's back, as an
// operator would.
func deleteLock(t *testing.T, client goredis.UniversalClient, b *redis.Backend, name string) {
	t.Helper()
	key := redis.LockKey(b, name)
	if n, err := client.Del(t.Context(), key).Result(); err != nil || n != 1 {
		t.Fatalf("DEL %s = %d, %v; want 1 key deleted", key, n, err)
	}
}

// TestGroups runs the group scenario of the contract suite (crashes and
// resignations among 8 candidates for 3 slots) against a real server, in
// real time.
func TestGroups(t *testing.T) {
	srv := redistest.Start(t)
	backendtest.RunGroups(t, backendtest.Harness{
		New: func(t *testing.T) backends.Backend { return newBackend(t, srv.Addr()) },
		TTL: time.Second,
	})
}

func TestNewRejectsBadInput(t *testing.T) {
	client := goredis.NewClient(redistest.Options("127.0.0.1:1")) // never dialled
	defer client.Close()
	tests := []struct {
		name   string
		client goredis.UniversalClient
		opts   []redis.Option
	}{
		{"nil client", nil, nil},
		{"typed-nil *Client", (*goredis.Client)(nil), nil},
		{"typed-nil *ClusterClient", (*goredis.ClusterClient)(nil), nil},
		{"typed-nil *Ring", (*goredis.Ring)(nil), nil},
		{"empty prefix", client, []redis.Option{redis.WithPrefix("")}},
		{"prefix with {", client, []redis.Option{redis.WithPrefix("a{b")}},
		{"prefix with }", client, []redis.Option{redis.WithPrefix("a}")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if b, err := redis.New(tt.client, tt.opts...); !errors.Is(err, backends.ErrInvalid) || b != nil {
				t.Fatalf("New = %v, %v; want ErrInvalid", b, err)
			}
		})
	}
}

// TestClosedClient: see backendtest.ClosedClient.
func TestClosedClient(t *testing.T) {
	srv := redistest.Start(t)
	client := goredis.NewClient(redistest.Options(srv.Addr()))
	client.Close()
	b, err := redis.New(client)
	if err != nil {
		t.Fatal(err)
	}
	backendtest.ClosedClient(t, b)
}

// TestKeys: a lock's keys share the hash tag {name}, with '%' and '}'
// escaped so that every name has a whole tag of its own, and the prefix
// keeps two backends apart.
func TestKeys(t *testing.T) {
	srv := redistest.Start(t)
	client := redistest.Client(t, srv.Addr())
	ctx := t.Context()
	names := map[string]string{
		"plain": "hustings:{plain}:lock",
		"a}b":   "hustings:{a%7Db}:lock",
		"}":     "hustings:{%7D}:lock",
		"%7D":   "hustings:{%257D}:lock",
		"{x}":   "hustings:{{x%7D}:lock",
	}
	b := newBackend(t, srv.Addr())
	s := openSession(t, b, "a", time.Minute)
	for name, key := range names {
		if _, err := s.Acquire(ctx, name, 0); err != nil {
			t.Fatalf("Acquire(%q): %v", name, err)
		}
		if n, err := client.Exists(ctx, key).Result(); err != nil || n != 1 {
			t.Errorf("lock %q: key %q exists = %d, %v; want 1", name, key, n, err)
		}
	}
	other := newBackend(t, srv.Addr(), redis.WithPrefix("other"))
	if _, err := openSession(t, other, "b", time.Minute).Acquire(ctx, "plain", 0); err != nil {
		t.Fatalf("Acquire under another prefix: %v", err)
	}
	if n, err := client.Exists(ctx, "other:{plain}:lock").Result(); err != nil || n != 1 {
		t.Errorf("key under prefix other: exists = %d, %v; want 1", n, err)
	}
}

// TestTokensSurviveDataLoss: a restart that loses every key, fencing
// counters included, does not make tokens go backwards: they are floored
// by the server's clock.
func TestTokensSurviveDataLoss(t *testing.T) {
	srv := redistest.Start(t)
	b := newBackend(t, srv.Addr())
	ctx := t.Context()
	var last events.Token
	for round := range 3 {
		s := openSession(t, b, "a", time.Minute)
		for range 3 {
			tok, err := s.Acquire(ctx, "fenced", 0)
			if err != nil {
				t.Fatalf("round %d: Acquire: %v", round, err)
			}
			if tok <= last {
				t.Fatalf("round %d: token %d after %d", round, tok, last)
			}
			last = tok
			if err := s.Release(ctx, "fenced", tok, 0); err != nil {
				t.Fatalf("round %d: Release: %v", round, err)
			}
		}
		if err := srv.Restart(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLostSessionChangesNothing: calls of a session that Redis lost
// report it and leave the locks as they were: free.
func TestLostSessionChangesNothing(t *testing.T) {
	srv := redistest.Start(t)
	b := newBackend(t, srv.Addr())
	ctx := t.Context()

	lost := openSession(t, b, "lost", time.Minute)
	if err := lost.KeepAlive(ctx); err != nil { // Open sends nothing: set the key
		t.Fatal(err)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	_, err := lost.Acquire(ctx, "after-restart", 0)
	wantErrs(t, "Acquire of a session lost in a restart", err, backends.ErrSessionLost)
	wantFree(t, b, "after-restart")
	wantErrs(t, "KeepAlive of a session lost in a restart", lost.KeepAlive(ctx), backends.ErrSessionLost)

	expired := openSession(t, b, "expired", 200*time.Millisecond)
	tok, err := expired.Acquire(ctx, "expired", 0)
	if err != nil {
		t.Fatal(err)
	}
	waitExpired(t, redistest.Client(t, srv.Addr()), expired)
	err = expired.Release(ctx, "expired", tok, time.Minute)
	wantErrs(t, "Release with a hold of an expired session", err, backends.ErrNotHeld, backends.ErrSessionLost)
	wantFree(t, b, "expired")
	if err := expired.Close(ctx); err != nil {
		t.Fatalf("Close of an expired session: %v", err)
	}
}

// TestTakeOverWakesWatchers: taking over the lock of a session that
// expired wakes the watchers, as taking a free lock does.
func TestTakeOverWakesWatchers(t *testing.T) {
	srv := redistest.Start(t)
	b := newBackend(t, srv.Addr())
	ctx := t.Context()
	old := openSession(t, b, "old", 200*time.Millisecond)
	if _, err := old.Acquire(ctx, "taken-over", 0); err != nil {
		t.Fatal(err)
	}
	ch, err := b.Watch(ctx, "taken-over")
	if err != nil {
		t.Fatal(err)
	}
	waitExpired(t, redistest.Client(t, srv.Addr()), old)
	select {
	case <-ch:
		t.Fatal("signal for an expiry: Redis publishes none")
	default:
	}
	if _, err := openSession(t, b, "new", time.Minute).Acquire(ctx, "taken-over", 0); err != nil {
		t.Fatalf("Acquire of a lock whose session expired: %v", err)
	}
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("no signal after the take-over")
	}
}

// TestUnreachable: on a dead link a call's deadline bounds it, and a
// watch notices the silence and is closed; while the server is down calls
// fail with ErrUnavailable, never ErrSessionLost, and watches are closed;
// all works again after a heal or a restart.
func TestUnreachable(t *testing.T) {
	srv := redistest.Start(t)
	link := faultlink.NewLink(t, srv.Addr())
	viaLink, direct := newBackend(t, link.Addr()), newBackend(t, srv.Addr())
	ctx := t.Context()
	cut, killed := watch(t, viaLink, "down"), watch(t, direct, "down")
	s := openSession(t, viaLink, "a", time.Minute)

	link.Blackhole()
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	start := time.Now()
	err := s.KeepAlive(short)
	cancel()
	wantErrs(t, "KeepAlive on a dead link", err, backends.ErrUnavailable, context.DeadlineExceeded)
	if took := time.Since(start); took > 4*time.Second {
		t.Errorf("KeepAlive with a 300ms deadline returned after %v: the deadline did not bound it", took)
	}
	waitClosed(t, cut, "the link went dark", 25*time.Second) // two silences of 5s
	link.Heal()
	if err := s.KeepAlive(ctx); err != nil {
		t.Fatalf("KeepAlive after the heal: %v", err)
	}

	d := openSession(t, direct, "d", time.Minute)
	srv.Kill()
	waitClosed(t, killed, "the server died", 15*time.Second)
	calls := map[string]func() error{
		// Open sends nothing on a single server (see Backend.Open): its
		// session's first call reports the outage.
		"Open": func() error {
			e, err := direct.Open(ctx, "e", time.Minute)
			if err != nil {
				return err
			}
			return e.KeepAlive(ctx)
		},
		"Holder":    func() error { _, err := direct.Holder(ctx, "down"); return err },
		"Watch":     func() error { _, err := direct.Watch(ctx, "down"); return err },
		"Acquire":   func() error { _, err := d.Acquire(ctx, "down", 0); return err },
		"KeepAlive": func() error { return d.KeepAlive(ctx) },
		"Release":   func() error { return d.Release(ctx, "down", 1, 0) },
	}
	errs := make(map[string]error)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, call := range calls { // at once: the driver retries each for seconds
		wg.Go(func() {
			err := call()
			mu.Lock()
			errs[name] = err
			mu.Unlock()
		})
	}
	wg.Wait()
	for name, err := range errs {
		if !errors.Is(err, backends.ErrUnavailable) || errors.Is(err, backends.ErrSessionLost) || errors.Is(err, backends.ErrNotHeld) {
			t.Errorf("%s while the server is down: %v, want ErrUnavailable only", name, err)
		}
	}

	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	// The driver may report its last failed dial for a moment.
	testserver.Eventually(t, "Open and KeepAlive work after the restart", 15*time.Second, func() bool {
		// Both of the client's pools must reach the server again (go-redis
		// pipelines have a pool of their own), or a dial retry of the
		// other outlives the test: a GET (Holder) and a pipeline
		// (KeepAlive; Open sends nothing on a single server).
		_, err := direct.Holder(ctx, "b")
		if err == nil {
			var s backends.Session
			if s, err = direct.Open(ctx, "b", time.Minute); err == nil {
				err = s.KeepAlive(ctx)
				_ = s.Close(ctx)
			}
		}
		if err != nil && !errors.Is(err, backends.ErrUnavailable) {
			t.Fatalf("Open and KeepAlive after the restart: %v", err)
		}
		return err == nil
	})
}

// watch watches name until the test ends.
func watch(t *testing.T, b *redis.Backend, name string) <-chan struct{} {
	t.Helper()
	ch, err := b.Watch(t.Context(), name)
	if err != nil {
		t.Fatalf("Watch(%q): %v", name, err)
	}
	return ch
}

// waitClosed fails the test unless ch is closed within d.
func waitClosed(t *testing.T, ch <-chan struct{}, after string, d time.Duration) {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-timeout:
			t.Fatalf("watch channel still open %v after %s", d, after)
		}
	}
}

// waitExpired waits until Redis has expired the key of s, which must have
// been set by a call of s; EXISTS expires a key past its TTL.
func waitExpired(t *testing.T, client *goredis.Client, s backends.Session) {
	t.Helper()
	key := redis.SessionKey(s)
	testserver.Eventually(t, "session key "+key+" expired", 10*time.Second, func() bool { return !exists(t, client, key) })
}

// openSession opens a session that is closed when the test ends.
func openSession(t *testing.T, b backends.Backend, id string, ttl time.Duration) backends.Session {
	t.Helper()
	s, err := b.Open(t.Context(), id, ttl)
	if err != nil {
		t.Fatalf("Open(%q): %v", id, err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

func wantErrs(t *testing.T, what string, err error, targets ...error) {
	t.Helper()
	for _, target := range targets {
		if !errors.Is(err, target) {
			t.Fatalf("%s: %v, want an error matching %q", what, err, target)
		}
	}
}

func wantFree(t *testing.T, b backends.Backend, name string) {
	t.Helper()
	if h, err := b.Holder(t.Context(), name); err != nil || h.ID != "" {
		t.Fatalf("Holder(%q) = %+v, %v; want free", name, h, err)
	}
}

// TestStorm starts a storm of campaigns on one shared session at once
// against a real server (see backendtest.RunStorm): on loopback, and over
// a link with 50 ms of latency, where the acquires queue for the client's
// 20 connections for seconds: the session's keep-alive must not wait
// behind them, or its 3 s TTL runs out and the storm starts over.
// slowStorm is how many campaigns storm over the slow link: 2,000 queue
// for 1.6 s at 64 calls in flight per 50 ms round trip, half the TTL,
// which is what the keep-alive must not wait behind; 10,000 would add a
// minute of the same to every run of the suite.
const slowStorm = 2_000

func TestStorm(t *testing.T) {
	srv := redistest.Start(t)
	t.Run("Loopback", func(t *testing.T) {
		backendtest.RunStorm(t, backendtest.Harness{
			New: func(t *testing.T) backends.Backend { return newBackend(t, srv.Addr()) },
			TTL: time.Second,
		}, 0)
	})
	t.Run("SlowLink", func(t *testing.T) {
		link := faultlink.NewLink(t, srv.Addr())
		link.Latency(50*time.Millisecond, 0)
		backendtest.RunStorm(t, backendtest.Harness{
			New: func(t *testing.T) backends.Backend { return newBackend(t, link.Addr()) },
			TTL: time.Second,
		}, slowStorm)
	})
}
