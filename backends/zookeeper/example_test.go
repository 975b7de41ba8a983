package zookeeper_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/zookeeper"
	"github.com/hustings/hustings/backends/zookeeper/zktest"
)

// Two candidates share one conn: the first takes the lock, the second
// queues (ErrHeld), and holds it once the first releases, with a larger
// fencing token (the nodes' czxids).
func Example() {
	ctx := context.Background()
	conn, _, err := zk.Connect(zkServers(), 4*time.Second, zk.WithLogger(quiet{}))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close() // the caller's conn: the Backend never closes it
	if err := zktest.WaitSession(conn, 10*time.Second); err != nil {
		fmt.Println(err)
		return
	}
	b, err := zookeeper.New(conn, zookeeper.WithRoot("/example-"+runID), zookeeper.WithSessionTimeout(4*time.Second))
	if err != nil {
		fmt.Println(err)
		return
	}

	alice, err := b.Open(ctx, "alice", 3*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	defer alice.Close(ctx)
	bob, err := b.Open(ctx, "bob", 3*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	defer bob.Close(ctx)

	first, _ := alice.Acquire(ctx, "svc/nightly-settlement", 0)
	_, err = bob.Acquire(ctx, "svc/nightly-settlement", 0)
	fmt.Println("bob waits:", errors.Is(err, backends.ErrHeld))

	_ = alice.Release(ctx, "svc/nightly-settlement", first, 0)
	h, _ := b.Holder(ctx, "svc/nightly-settlement")
	fmt.Println("holder after the release:", h.ID) // bob's queued node is the oldest now
	second, _ := bob.Acquire(ctx, "svc/nightly-settlement", 0)
	fmt.Println("larger token:", second > first)
	// Output:
	// bob waits: true
	// holder after the release: bob
	// larger token: true
}

// A leader writes under its term: the write commits only in a transaction
// with a check on the leader's lock node, so once another candidate holds
// the lock the old leader's write is refused and nothing is applied.
func ExampleBackend_Fence() {
	ctx := context.Background()
	conn, _, err := zk.Connect(zkServers(), 4*time.Second, zk.WithLogger(quiet{}))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()
	if err := zktest.WaitSession(conn, 10*time.Second); err != nil {
		fmt.Println(err)
		return
	}
	root := "/example-fence-" + runID
	b, err := zookeeper.New(conn, zookeeper.WithRoot(root), zookeeper.WithSessionTimeout(4*time.Second))
	if err != nil {
		fmt.Println(err)
		return
	}
	alice, err := b.Open(ctx, "alice", 3*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	defer alice.Close(ctx)
	bob, err := b.Open(ctx, "bob", 3*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	defer bob.Close(ctx)
	report := root + "-report"
	if _, err := conn.Create(report, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		fmt.Println(err)
		return
	}
	write := func(v string) *zk.SetDataRequest {
		return &zk.SetDataRequest{Path: report, Data: []byte(v), Version: -1}
	}

	old, _ := alice.Acquire(ctx, "report", 0)
	_, err = b.Fence(ctx, "report", old, write("alice's"))
	fmt.Println("alice writes:", err)

	_ = alice.Release(ctx, "report", old, 0) // or: alice paused, her session expired
	tok, _ := bob.Acquire(ctx, "report", 0)
	_, err = b.Fence(ctx, "report", old, write("alice's, late"))
	fmt.Println("alice's late write refused:", errors.Is(err, backends.ErrNotHeld))
	_, err = b.Fence(ctx, "report", tok, write("bob's"))
	fmt.Println("bob writes:", err)

	data, _, _ := conn.Get(report)
	fmt.Println("report:", string(data))
	// Output:
	// alice writes: <nil>
	// alice's late write refused: true
	// bob writes: <nil>
	// report: bob's
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}
