package redistest_test

import (
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/hustings/hustings/backends/redis/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestRestartLosesData: a server answers, a restart on the same port
// comes back empty, and commands are counted.
func TestRestartLosesData(t *testing.T) {
	srv := redistest.Start(t)
	client := redistest.Client(t, srv.Addr())
	ctx := t.Context()
	if err := client.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	calls, err := srv.CommandCalls(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if calls["set"] != 1 {
		t.Fatalf("CommandCalls = %v, want set:1", calls)
	}
	addr := srv.Addr()
	srv.Kill()
	if err := client.Ping(ctx).Err(); err == nil {
		t.Fatal("PING answered by a killed server")
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	if srv.Addr() != addr {
		t.Fatalf("restarted on %s, want %s", srv.Addr(), addr)
	}
	if n, err := client.Exists(ctx, "k").Result(); err != nil || n != 0 {
		t.Fatalf("EXISTS k after the restart = %d, %v; want 0: data lost", n, err)
	}
	srv.Stop()
	srv.Stop()
	if err := srv.Restart(); err == nil {
		t.Fatal("Restart after Stop succeeded")
	}
}

// TestDurableRestartKeepsData: a Durable server keeps an acknowledged key,
// and its expiry, across a SIGKILL and restart.
func TestDurableRestartKeepsData(t *testing.T) {
	srv := redistest.Start(t, redistest.Durable())
	client := redistest.Client(t, srv.Addr())
	ctx := t.Context()
	if err := client.Set(ctx, "k", "v", time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	if v, err := client.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("after a restart GET k = %q, %v; want v", v, err)
	}
	if ttl, err := client.PTTL(ctx, "k").Result(); err != nil || ttl <= 0 || ttl > time.Hour {
		t.Fatalf("after a restart PTTL k = %v, %v; want its hour", ttl, err)
	}
}

// TestCluster: a Cluster server serves every slot through a Cluster
// client, refuses a script over keys of two slots, and still does after a
// restart (which loses the data but keeps the node's slots).
func TestCluster(t *testing.T) {
	srv := redistest.Start(t, redistest.Cluster())
	client := redistest.ClusterClient(t, srv.Addr())
	ctx := t.Context()
	for round := range 2 {
		for _, k := range []string{"a", "b", "c"} {
			if err := client.Set(ctx, k, "v", 0).Err(); err != nil {
				t.Fatalf("round %d: SET %s: %v", round, k, err)
			}
		}
		err := client.Eval(ctx, "return redis.call('MGET', KEYS[1], KEYS[2])", []string{"a", "b"}).Err()
		if !goredis.HasErrorPrefix(err, "CROSSSLOT") {
			t.Fatalf("round %d: script over two slots: %v, want CROSSSLOT", round, err)
		}
		if err := srv.Restart(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestConfig: a Config directive reaches the server.
func TestConfig(t *testing.T) {
	srv := redistest.Start(t, redistest.Config("maxmemory", "4mb"))
	got, err := redistest.Client(t, srv.Addr()).ConfigGet(t.Context(), "maxmemory").Result()
	if err != nil || got["maxmemory"] != "4194304" {
		t.Fatalf("CONFIG GET maxmemory = %v, %v; want 4194304", got, err)
	}
}
