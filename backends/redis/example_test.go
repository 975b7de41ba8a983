package redis_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/redis"
	"github.com/hustings/hustings/backends/redis/redistest"
)

// Two candidates share one Redis: the first takes the lock, the second is
// told it is held, and takes it after the release with a larger fencing
// token. The caller makes the client, and closes it.
func Example() {
	dir, err := os.MkdirTemp("", "redis-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	srv, err := redistest.StartServer(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Stop()

	client := goredis.NewClient(&goredis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	defer client.Close()
	b, err := redis.New(client, redis.WithPrefix("billing"))
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	alice, _ := b.Open(ctx, "alice", 10*time.Second)
	defer alice.Close(ctx)
	bob, _ := b.Open(ctx, "bob", 10*time.Second)
	defer bob.Close(ctx)

	tok, _ := alice.Acquire(ctx, "nightly-settlement", 0)
	h, _ := b.Holder(ctx, "nightly-settlement")
	fmt.Println("held by", h.ID)

	_, err = bob.Acquire(ctx, "nightly-settlement", 0)
	fmt.Println("bob skips:", errors.Is(err, backends.ErrHeld))

	_ = alice.Release(ctx, "nightly-settlement", tok, 0)
	next, _ := bob.Acquire(ctx, "nightly-settlement", 0)
	fmt.Println("bob's token is larger:", next > tok)
	// Output:
	// held by alice
	// bob skips: true
	// bob's token is larger: true
}
