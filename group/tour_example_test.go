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

// A group campaign under WhileLeader: work for the slot this candidate
// holds, under its token. The README's tour shows this Example.
func Example_whileLeader() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := memory.New()
	rollUp := func(ctx context.Context, slot int, token events.Token) error {
		fmt.Println("rolling up for slot", slot, "under token", token)
		cancel() // for the example: one term only
		<-ctx.Done()
		return nil
	}
	g, err := group.New(b, "tenant-rollups", 3, campaign.WithID("node-1"))
	if err != nil {
		panic(err)
	}
	err = campaign.WhileLeader(ctx, g, func(ctx context.Context, term events.Event) error {
		return rollUp(ctx, term.Slot, term.Token) // slot 0, 1 or 2
	})
	fmt.Println(err)
	// Output:
	// rolling up for slot 0 under token 1
	// context canceled
}

// A group ranked by score, with preemption. The README's tour shows this
// Example.
func Example_score() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := memory.New()
	idleShare := func() float64 { return 0.8 }
	g, err := group.New(b, "tenant-rollups", 3,
		group.WithStrategy(strategy.Score()), group.WithScore(idleShare()),
		group.WithPreemption(30*time.Second)) // out-ranked holders hand over, with hysteresis
	if err != nil {
		panic(err)
	}
	defer g.Close()
	go g.Run(ctx)
	e := <-g.Events()
	fmt.Println(e.Kind, e.Token)
	// Output: elected 1
}
