package redis_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/hustings/hustings/backends/redis"
	"github.com/hustings/hustings/backends/redis/redistest"
	"github.com/hustings/hustings/events"
)

// TestTokensPassACounterAheadOfTheClock: a fencing counter ahead of the
// server's clock (a clock that went back, or names taken more than once a
// microsecond) still makes each token its last value + 1, strictly
// increasing.
func TestTokensPassACounterAheadOfTheClock(t *testing.T) {
	srv := redistest.Start(t)
	client := redistest.Client(t, srv.Addr())
	b, err := redis.New(client)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	ahead := uint64(time.Now().Add(24 * time.Hour).UnixMicro())
	fence := redis.DefaultPrefix + ":" + redis.HashTag("ahead") + ":fence"
	if err := client.Set(ctx, fence, strconv.FormatUint(ahead, 10), 0).Err(); err != nil {
		t.Fatal(err)
	}
	s := openSession(t, b, "a", time.Minute)
	for i := range uint64(3) {
		tok, err := s.Acquire(ctx, "ahead", 0)
		if err != nil {
			t.Fatal(err)
		}
		if want := events.Token(ahead + i + 1); tok != want {
			t.Fatalf("take %d: token %d, want %d (the counter + 1)", i, tok, want)
		}
		if err := s.Release(ctx, "ahead", tok, 0); err != nil {
			t.Fatal(err)
		}
	}
}
