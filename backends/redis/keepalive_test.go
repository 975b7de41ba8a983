package redis_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/redis"
	"github.com/hustings/hustings/backends/redis/redistest"
)

// counter is a go-redis hook that counts what the client sends: single
// commands and pipelines, each one round trip.
type counter struct {
	trips atomic.Int64
}

func (c *counter) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (c *counter) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		c.trips.Add(1)
		return next(ctx, cmd)
	}
}

func (c *counter) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		c.trips.Add(1)
		return next(ctx, cmds)
	}
}

// TestKeepAliveCostsOneCommand: a session holding 1,000 locks is kept
// alive by one command, one round trip, per KeepAlive, whatever the number
// of locks; Close then frees them all.
func TestKeepAliveCostsOneCommand(t *testing.T) {
	const locks, renewals = 1000, 20
	srv := redistest.Start(t)
	client := redistest.Client(t, srv.Addr())
	hook := &counter{}
	client.AddHook(hook)
	b, err := redis.New(client)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	s, err := b.Open(ctx, "many", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	for i := range locks {
		if _, err := s.Acquire(ctx, fmt.Sprintf("lock-%d", i), 0); err != nil {
			t.Fatalf("Acquire %d: %v", i, err)
		}
	}

	before, err := srv.CommandCalls(ctx)
	if err != nil {
		t.Fatal(err)
	}
	trips := hook.trips.Load()
	for range renewals {
		if err := s.KeepAlive(ctx); err != nil {
			t.Fatalf("KeepAlive: %v", err)
		}
	}
	sent := hook.trips.Load() - trips
	after, err := srv.CommandCalls(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := totalExceptInfo(after) - totalExceptInfo(before); got != renewals {
		t.Errorf("%d KeepAlives of a session holding %d locks ran %d commands on the server, want %d (before %v, after %v)",
			renewals, locks, got, renewals, before, after)
	}
	if sent != renewals {
		t.Errorf("%d KeepAlives sent %d commands or pipelines, want %d", renewals, sent, renewals)
	}

	other, err := b.Open(ctx, "other", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(context.Background())
	for _, i := range []int{0, locks / 2, locks - 1} {
		if _, err := other.Acquire(ctx, fmt.Sprintf("lock-%d", i), 0); !errors.Is(err, backends.ErrHeld) {
			t.Fatalf("Acquire of lock-%d by another session: %v, want ErrHeld", i, err)
		}
	}
	if err := s.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for _, i := range []int{0, locks / 2, locks - 1} {
		if h, err := b.Holder(ctx, fmt.Sprintf("lock-%d", i)); err != nil || !h.Free() {
			t.Fatalf("Holder(lock-%d) after Close = %+v, %v; want free", i, h, err)
		}
	}
}

func totalExceptInfo(calls map[string]int64) int64 {
	var n int64
	for name, c := range calls {
		if name != "info" {
			n += c
		}
	}
	return n
}
