package redis_test

import (
	"context"
	"errors"
	"fmt"
	"log"
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
	alice, err := b.Open(ctx, "alice", 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	defer alice.Close(ctx)
	bob, err := b.Open(ctx, "bob", 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
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

// A leader writes under its term: the script runs only while the lock is
// held under the leader's token, in the same script run as the check.
// Once another candidate took the lock, the old leader's write is refused
// and nothing runs. The keys carry the lock's hash tag, so they share its
// Cluster slot.
func ExampleBackend_Fence() {
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
	b, err := redis.New(client)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	alice, err := b.Open(ctx, "alice", 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	defer alice.Close(ctx)
	bob, err := b.Open(ctx, "bob", 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	defer bob.Close(ctx)

	const deposit = `return redis.call('INCRBY', KEYS[1], ARGV[1])`
	balance := []string{redis.HashTag("ledger") + ":balance"} // "{ledger}:balance"

	old, _ := alice.Acquire(ctx, "ledger", 0)
	v, err := b.Fence(ctx, "ledger", old, deposit, balance, 10)
	fmt.Println("alice deposits:", v, err)

	_ = alice.Release(ctx, "ledger", old, 0) // or: alice paused, her session expired
	tok, _ := bob.Acquire(ctx, "ledger", 0)
	_, err = b.Fence(ctx, "ledger", old, deposit, balance, 10)
	fmt.Println("alice's late deposit refused:", errors.Is(err, backends.ErrNotHeld))
	v, err = b.Fence(ctx, "ledger", tok, deposit, balance, 5)
	fmt.Println("bob deposits:", v, err)

	_, err = b.Fence(ctx, "ledger", tok, deposit, []string{"balance"}, 5)
	fmt.Println("a key outside the lock's slot:", errors.Is(err, backends.ErrInvalid))
	// Output:
	// alice deposits: 10 <nil>
	// alice's late deposit refused: true
	// bob deposits: 15 <nil>
	// a key outside the lock's slot: true
}
