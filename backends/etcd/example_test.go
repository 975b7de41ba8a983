package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/etcd"
	"github.com/hustings/hustings/backends/etcd/etcdtest"
)

// Two candidates share an etcd cluster: the first takes the lock, the
// second is told it is held, and takes it after the release with a larger
// fencing token (a create revision).
func Example() {
	dir, err := os.MkdirTemp("", "etcd-example")
	if err != nil {
		log.Fatal(err)
	}
	srv, err := etcdtest.StartServer(dir)
	if err != nil {
		log.Fatal(err)
	}
	defer srv.RemoveAll()
	cli, err := etcdtest.NewClient(srv.Addr())
	if err != nil {
		log.Fatal(err)
	}
	defer cli.Close() // the backend never closes the caller's client

	ctx := context.Background()
	b, err := etcd.New(cli, etcd.WithPrefix("/example/"))
	if err != nil {
		log.Fatal(err)
	}
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

	first, _ := alice.Acquire(ctx, "nightly-settlement", 0)
	_, err = bob.Acquire(ctx, "nightly-settlement", 0)
	fmt.Println("bob skips:", errors.Is(err, backends.ErrHeld))

	_ = alice.Release(ctx, "nightly-settlement", first, 0)
	second, _ := bob.Acquire(ctx, "nightly-settlement", 0)
	h, _ := b.Holder(ctx, "nightly-settlement")
	fmt.Println(h.ID, "holds it; larger token:", second > first)
	// Output:
	// bob skips: true
	// bob holds it; larger token: true
}
