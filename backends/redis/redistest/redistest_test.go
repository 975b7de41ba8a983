package redistest_test

import (
	"testing"
	"time"

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
