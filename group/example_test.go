package group_test

import (
	"context"
	"fmt"
	"time"

	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/group"
	"github.com/hustings/hustings/strategy"
)

// Two slots: two candidates lead at once, and a third run finds them both
// taken.
func Example() {
	b := memory.New()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 2)
	for _, id := range []string{"a", "b"} {
		g, err := group.New(b, "rollups", 2, campaign.WithID(id))
		if err != nil {
			panic(err)
		}
		go func() { done <- g.Run(ctx) }()
		e := <-g.Events()
		fmt.Println(e.Holder, e.Kind)
	}
	res, err := group.RunIfLeader(ctx, b, "rollups", 2, func(ctx context.Context, token events.Token) (int, error) {
		return 0, nil
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("third run:", res.Outcome)
	cancel()
	fmt.Println("Run:", <-done, "and", <-done)
	// Output:
	// a elected
	// b elected
	// third run: skipped
	// Run: context canceled and context canceled
}

// With the score strategy, the best-scored candidates are preferred; with
// preemption, a better candidate that arrives late takes over a slot.
func ExampleWithStrategy() {
	b := memory.New()
	g, err := group.New(b, "tenants", 3,
		campaign.WithID("node-1"),
		group.WithStrategy(strategy.Score()),
		group.WithScore(0.8), // for example the node's idle share
		group.WithPreemption(10*time.Second),
	)
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	e := <-g.Events()
	fmt.Println(e.Kind, "slot", e.Slot)
	if err := g.SetScore(0.3); err != nil { // re-ranked at once; others may take over later
		panic(err)
	}
	cancel()
	fmt.Println("Run:", <-done)
	// Output:
	// elected slot 0
	// Run: context canceled
}
