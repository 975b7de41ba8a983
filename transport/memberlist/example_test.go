package memberlist_test

import (
	"context"
	"fmt"
	"time"

	"github.com/hustings/hustings/strategy"
	"github.com/hustings/hustings/transport/memberlist"
)

// Two nodes find each other by gossip and see each other's registration
// in a group, and who leads a lock.
func Example() {
	ctx := context.Background()
	a, err := memberlist.New("node-a", memberlist.WithGossipInterval(20*time.Millisecond))
	if err != nil {
		panic(err)
	}
	b, err := memberlist.New("node-b", memberlist.WithGossipInterval(20*time.Millisecond))
	if err != nil {
		panic(err)
	}
	if err := a.Start(ctx); err != nil {
		panic(err)
	}
	if err := b.Start(ctx, a.Addr()); err != nil { // a is b's seed
		panic(err)
	}
	if _, err := a.Register(ctx, "tenants", strategy.Candidate{Score: 0.8}); err != nil {
		panic(err)
	}
	if _, err := b.Register(ctx, "tenants", strategy.Candidate{Score: 0.3}); err != nil {
		panic(err)
	}
	if err := a.Announce(ctx, "nightly", 0, 42); err != nil {
		panic(err)
	}

	// Gossip takes a moment; a real caller does not wait for it.
	var ms []strategy.Candidate
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if ms, err = b.Members(ctx, "tenants"); err != nil {
			panic(err)
		}
		if len(ms) == 2 && len(b.Leaders("nightly")) == 1 {
			break
		}
	}
	for _, m := range ms {
		fmt.Println(m.ID, m.Score)
	}
	fmt.Printf("%+v\n", b.Leaders("nightly"))
	for _, n := range []*memberlist.Node{b, a} {
		if err := n.Close(); err != nil {
			panic(err)
		}
	}
	// Output:
	// node-a 0.8
	// node-b 0.3
	// [{Node:node-a Slot:0 Token:42}]
}
