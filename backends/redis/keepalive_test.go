package redis_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/redis"
	"github.com/hustings/hustings/backends/redis/redistest"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/testserver"
)

// counter is a go-redis hook that counts what the client sends: round
// trips (a single command or a pipeline is one) and commands by name.
type counter struct {
	mu    sync.Mutex
	trips int
	cmds  map[string]int
}

func (c *counter) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (c *counter) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		c.add(cmd)
		return next(ctx, cmd)
	}
}

func (c *counter) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		c.add(cmds...)
		return next(ctx, cmds)
	}
}

func (c *counter) add(cmds ...goredis.Cmder) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.trips++
	if c.cmds == nil {
		c.cmds = make(map[string]int)
	}
	for _, cmd := range cmds {
		c.cmds[cmd.Name()]++
	}
}

// reset returns what was counted since the last reset, and starts again.
func (c *counter) reset() (trips int, cmds map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	trips, cmds = c.trips, c.cmds
	c.trips, c.cmds = 0, nil
	return trips, cmds
}

// TestKeepAliveCost: whatever the number of locks, a KeepAlive is one
// round trip. On a single server it is the PEXPIRE and, if the session
// holds locks, one EVALSHA of the confirm script, which runs one MGET per
// 1,000 locks inside. On a Cluster it is a pipeline of the PEXPIRE and one
// GET per lock. Close then frees every lock.
func TestKeepAliveCost(t *testing.T) {
	const renewals = 20
	single := redistest.Start(t)
	cluster := redistest.Start(t, redistest.Cluster())
	tests := []struct {
		name   string
		srv    *redistest.Server
		client func(t *testing.T, addr string) goredis.UniversalClient
		locks  int
		want   map[string]int // commands sent per KeepAlive
		inside map[string]int // commands its script ran per KeepAlive
	}{
		{"single/0", single, singleClient, 0, map[string]int{"pexpire": 1}, nil},
		{"single/1", single, singleClient, 1, map[string]int{"pexpire": 1, "evalsha": 1}, map[string]int{"mget": 1}},
		{"single/1000", single, singleClient, 1000, map[string]int{"pexpire": 1, "evalsha": 1}, map[string]int{"mget": 1}},
		{"single/1001", single, singleClient, 1001, map[string]int{"pexpire": 1, "evalsha": 1}, map[string]int{"mget": 2}},
		{"cluster/0", cluster, clusterClient, 0, map[string]int{"pexpire": 1}, nil},
		{"cluster/1", cluster, clusterClient, 1, map[string]int{"pexpire": 1, "get": 1}, nil},
		{"cluster/1000", cluster, clusterClient, 1000, map[string]int{"pexpire": 1, "get": 1000}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := tt.client(t, tt.srv.Addr())
			hook := &counter{}
			client.AddHook(hook)
			b, err := redis.New(client, redis.WithPrefix(strings.ReplaceAll(tt.name, "/", "-")))
			if err != nil {
				t.Fatal(err)
			}
			ctx := t.Context()
			s := openSession(t, b, "many", time.Minute)
			for i := range tt.locks {
				if _, err := s.Acquire(ctx, fmt.Sprintf("lock-%d", i), 0); err != nil {
					t.Fatalf("Acquire %d: %v", i, err)
				}
			}
			if err := s.KeepAlive(ctx); err != nil { // loads the script
				t.Fatalf("KeepAlive: %v", err)
			}
			before, err := tt.srv.CommandCalls(ctx)
			if err != nil {
				t.Fatal(err)
			}
			hook.reset()
			for range renewals {
				if err := s.KeepAlive(ctx); err != nil {
					t.Fatalf("KeepAlive: %v", err)
				}
			}
			trips, sent := hook.reset()
			after, err := tt.srv.CommandCalls(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if trips != renewals {
				t.Errorf("%d KeepAlives of a session holding %d locks made %d round trips, want %d", renewals, tt.locks, trips, renewals)
			}
			want := times(tt.want, renewals)
			if !maps.Equal(sent, want) {
				t.Errorf("%d KeepAlives sent %v, want %v", renewals, sent, want)
			}
			maps.Copy(want, times(tt.inside, renewals))
			if ran := ranBetween(before, after); !maps.Equal(ran, want) {
				t.Errorf("%d KeepAlives ran %v on the server, want %v", renewals, ran, want)
			}
			if lost := s.Lost(); lost != nil {
				t.Errorf("Lost() = %v with every lock in place, want nil", lost)
			}
			if tt.locks > 0 {
				closeFrees(t, b, s, tt.locks)
			}
		})
	}
}

func singleClient(t *testing.T, addr string) goredis.UniversalClient {
	return redistest.Client(t, addr)
}

func clusterClient(t *testing.T, addr string) goredis.UniversalClient {
	return redistest.ClusterClient(t, addr)
}

// times returns counts multiplied by n.
func times(counts map[string]int, n int) map[string]int {
	m := make(map[string]int, len(counts))
	for name, c := range counts {
		m[name] = c * n
	}
	return m
}

// ranBetween returns the commands the server ran between two readings of
// CommandCalls, leaving out INFO (the readings) and CLUSTER (a Cluster
// client's own look at the slots).
func ranBetween(before, after map[string]int64) map[string]int {
	ran := make(map[string]int)
	for name, n := range after {
		if d := n - before[name]; d > 0 && name != "info" && !strings.HasPrefix(name, "cluster") {
			ran[name] = int(d)
		}
	}
	return ran
}

// closeFrees checks that locks lock-0 … lock-(n-1) of s are held against
// another session, and free once s closed.
func closeFrees(t *testing.T, b backends.Backend, s backends.Session, n int) {
	t.Helper()
	ctx := t.Context()
	other := openSession(t, b, "other", time.Minute)
	some := []string{"lock-0", fmt.Sprintf("lock-%d", n/2), fmt.Sprintf("lock-%d", n-1)}
	for _, name := range some {
		if _, err := other.Acquire(ctx, name, 0); !errors.Is(err, backends.ErrHeld) {
			t.Fatalf("Acquire of %s by another session: %v, want ErrHeld", name, err)
		}
	}
	if err := s.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for _, name := range some {
		wantFree(t, b, name)
	}
}

// TestKeepAliveLoadsConfirmScript: a server that lost its script cache
// (a restart keeps the data with persistence, not the scripts) is sent the
// confirm script's source, and KeepAlive still confirms the locks.
func TestKeepAliveLoadsConfirmScript(t *testing.T) {
	srv := redistest.Start(t)
	client := redistest.Client(t, srv.Addr())
	b := newBackend(t, srv.Addr())
	ctx := t.Context()
	s := openSession(t, b, "a", time.Minute)
	gone, err := s.Acquire(ctx, "gone", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Acquire(ctx, "kept", 0); err != nil {
		t.Fatal(err)
	}
	if err := s.KeepAlive(ctx); err != nil {
		t.Fatalf("KeepAlive: %v", err)
	}
	if err := client.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	deleteLock(t, client, b, "gone")
	if err := s.KeepAlive(ctx); err != nil {
		t.Fatalf("KeepAlive after SCRIPT FLUSH: %v", err)
	}
	if lost, want := s.Lost(), map[string]events.Token{"gone": gone}; !maps.Equal(lost, want) {
		t.Fatalf("Lost() = %v, want %v", lost, want)
	}
}

// TestEvictedLockIsLost: a lock key that Redis evicts (maxmemory with an
// allkeys policy) is reported by its holder's next KeepAlive, which
// succeeds; the lock is free, and the next holder's token is larger
// although the fencing counter may have been evicted too.
//
// Eviction is approximated LRU on a clock of seconds, so the test ages
// the lock key, then a first batch of keys, by a tick of that clock each,
// and then writes fresh keys, touching the session key as it goes, until
// the lock key is gone: the oldest keys go first, the session key (and the
// fresh keys) after them. It checks that the lock key was evicted and the
// session key was not before it asserts anything.
func TestEvictedLockIsLost(t *testing.T) {
	const (
		value   = 1024 // bytes a key holds
		oldKeys = 1500 // ~2 MB, half of maxmemory
		batch   = 100
		most    = 20000 // ~25 MB of fresh keys at most
	)
	srv := redistest.Start(t,
		redistest.Config("maxmemory", "4mb"),
		redistest.Config("maxmemory-policy", "allkeys-lru"),
		redistest.Config("maxmemory-samples", "64"))
	client := redistest.Client(t, srv.Addr())
	b := newBackend(t, srv.Addr())
	ctx := t.Context()
	s := openSession(t, b, "a", time.Hour)
	tok, err := s.Acquire(ctx, "evicted", 0)
	if err != nil {
		t.Fatal(err)
	}
	lockKey, sessionKey := redis.LockKey(b, "evicted"), redis.SessionKey(s)

	fill := func(from, n int) {
		t.Helper()
		_, err := client.Pipelined(ctx, func(p goredis.Pipeliner) error {
			for i := from; i < from+n; i++ {
				p.Set(ctx, fmt.Sprintf("filler:%d", i), strings.Repeat("x", value), 0)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("writing filler keys: %v", err)
		}
	}
	waitIdle(t, client, lockKey)
	fill(0, oldKeys)
	waitIdle(t, client, fmt.Sprintf("filler:%d", oldKeys-1))
	if n := evictions(t, srv); n != 0 {
		t.Fatalf("%d keys evicted before the fresh keys came: maxmemory too small for this test", n)
	}
	for i := oldKeys; exists(t, client, lockKey); i += batch {
		if i >= oldKeys+most {
			t.Fatalf("lock key %s still there after %d fresh keys of %d bytes (%d evictions)", lockKey, most, value, evictions(t, srv))
		}
		if err := client.Touch(ctx, sessionKey).Err(); err != nil {
			t.Fatal(err)
		}
		fill(i, batch)
	}
	if !exists(t, client, sessionKey) {
		t.Fatalf("the session key was evicted with the lock key, although it was used last")
	}
	t.Logf("lock key evicted after %d evictions", evictions(t, srv))

	if err := s.KeepAlive(ctx); err != nil {
		t.Fatalf("KeepAlive after the eviction: %v", err)
	}
	if lost, want := s.Lost(), map[string]events.Token{"evicted": tok}; !maps.Equal(lost, want) {
		t.Fatalf("Lost() = %v, want %v", lost, want)
	}
	next, err := openSession(t, b, "b", time.Hour).Acquire(ctx, "evicted", 0)
	if err != nil {
		t.Fatalf("Acquire of the evicted lock: %v", err)
	}
	if next <= tok {
		t.Fatalf("token after the eviction = %d, want > %d", next, tok)
	}
}

// waitIdle waits until key has been idle for a tick of the server's LRU
// clock (seconds): keys used later are then younger.
func waitIdle(t *testing.T, client *goredis.Client, key string) {
	t.Helper()
	testserver.Eventually(t, key+" idle for a second", 10*time.Second, func() bool {
		idle, err := client.ObjectIdleTime(t.Context(), key).Result()
		if err != nil {
			t.Fatalf("OBJECT IDLETIME %s: %v", key, err)
		}
		return idle >= time.Second
	})
}

// exists reports whether key exists; EXISTS does not touch it.
func exists(t *testing.T, client *goredis.Client, key string) bool {
	t.Helper()
	n, err := client.Exists(t.Context(), key).Result()
	if err != nil {
		t.Fatalf("EXISTS %s: %v", key, err)
	}
	return n == 1
}

// evictions returns how many keys the server evicted since it started.
func evictions(t *testing.T, srv *redistest.Server) int64 {
	t.Helper()
	n, err := srv.Evictions(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return n
}
