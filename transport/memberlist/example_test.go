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
	a, _ := memberlist.New("node-a", memberlist.WithGossipInterval(20*time.Millisecond))
	b, _ := memberlist.New("node-b", memberlist.WithGossipInterval(20*time.Millisecond))
	defer a.Close()
	defer b.Close()
	if err := a.Start(ctx); err != nil {
		panic(err)
	}
	if err := b.Start(ctx, a.Addr()); err != nil { // a is b's seed
		panic(err)
	}
	a.Register(ctx, "tenants", strategy.Candidate{Score: 0.8})
	b.Register(ctx, "tenants", strategy.Candidate{Score: 0.3})
	a.Announce(ctx, "nightly", 0, 42)

	// Gossip takes a moment; a real caller does not wait for it.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if ms, _ := b.Members(ctx, "tenants"); len(ms) == 2 && len(b.Leaders("nightly")) == 1 {
			break
		}
	}
	ms, _ := b.Members(ctx, "tenants")
	for _, m := range ms {
		fmt.Println(m.ID, m.Score)
	}
	fmt.Printf("%+v\n", b.Leaders("nightly"))
	// Output:
	// node-a 0.8
	// node-b 0.3
	// [{Node:node-a Slot:0 Token:42}]
}
