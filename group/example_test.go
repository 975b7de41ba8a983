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
	for _, id := range []string{"a", "b"} {
		g, err := group.New(b, "rollups", 2, campaign.WithID(id))
		if err != nil {
			panic(err)
		}
		go g.Run(ctx)
		e := <-g.Events()
		fmt.Println(e.Holder, e.Kind)
		defer g.Close()
	}
	res, _ := group.RunIfLeader(ctx, b, "rollups", 2, func(ctx context.Context, token events.Token) (int, error) {
		return 0, nil
	})
	fmt.Println("third run:", res.Outcome)
	// Output:
	// a elected
	// b elected
	// third run: skipped
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
	defer g.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go g.Run(ctx)
	e := <-g.Events()
	fmt.Println(e.Kind, "slot", e.Slot)
	_ = g.SetScore(0.3) // re-ranked at once; others may take over later
	// Output: elected slot 0
}
