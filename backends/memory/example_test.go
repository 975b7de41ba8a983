package memory_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/memory"
)

// Two candidates of one process share one Backend: the first takes the
// lock, the second is told it is held, and takes it after the release with
// a higher fencing token.
func Example() {
	ctx := context.Background()
	b := memory.New()

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
	fmt.Println("alice holds it with token", tok)

	_, err = bob.Acquire(ctx, "nightly-settlement", 0)
	fmt.Println("bob skips:", errors.Is(err, backends.ErrHeld))

	_ = alice.Release(ctx, "nightly-settlement", tok, 0)
	tok, _ = bob.Acquire(ctx, "nightly-settlement", 0)
	h, _ := b.Holder(ctx, "nightly-settlement")
	fmt.Println(h.ID, "holds it with token", tok)
	// Output:
	// alice holds it with token 1
	// bob skips: true
	// bob holds it with token 2
}

// A partition cuts one candidate off: its calls block until their context
// ends, and fail with ErrUnavailable.
func ExampleBackend_Partition() {
	ctx := context.Background()
	b := memory.New()
	alice, err := b.Open(ctx, "alice", 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	defer alice.Close(ctx)

	b.Partition("alice")
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	err = alice.KeepAlive(short)
	cancel()
	fmt.Println(errors.Is(err, backends.ErrUnavailable), errors.Is(err, context.DeadlineExceeded))

	b.Heal("alice")
	fmt.Println(alice.KeepAlive(ctx))
	// Output:
	// true true
	// <nil>
}
