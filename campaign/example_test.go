package campaign_test

import (
	"context"
	"fmt"

	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
)

// A campaign publishes Elected once the backend confirmed the lock, and
// Revoked when the term ends; the channel closes when Run returns.
func Example() {
	b := memory.New() // the embedded default; share one per process
	c, err := campaign.New(b, "reconcile", campaign.WithID("node-1"))
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()

	for e := range c.Events() {
		fmt.Println(e.Kind, e.Holder, "token", e.Token)
		if e.Kind == events.Elected {
			cancel() // stop campaigning: the term ends gracefully
		}
	}
	fmt.Println("Run:", <-done)
	// Output:
	// elected node-1 token 1
	// revoked node-1 token 1
	// Run: context canceled
}

// RunIfLeader runs once if the lock is free and skips quietly otherwise.
func ExampleRunIfLeader() {
	b := memory.New()
	ctx := context.Background()
	res, err := campaign.RunIfLeader(ctx, b, "migrate", func(ctx context.Context, token events.Token) (string, error) {
		return "schema v2", nil // write with token, so a stale leader is refused
	})
	fmt.Println(res.Outcome, res.Value, res.Token, err)
	// Output:
	// succeeded schema v2 1 <nil>
}

// WhileLeader runs a function for each term, under a context that ends
// with the term.
func ExampleWhileLeader() {
	b := memory.New()
	c, err := campaign.New(b, "poller", campaign.WithID("node-1"))
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err = campaign.WhileLeader(ctx, c, func(ctx context.Context, term events.Event) error {
		fmt.Println("polling under token", term.Token)
		cancel()     // for the example: stop after one term
		<-ctx.Done() // a real poller loops until its term ends
		return nil
	})
	fmt.Println("WhileLeader:", err)
	// Output:
	// polling under token 1
	// WhileLeader: context canceled
}

// Many campaigns on one shared session: one keep-alive per tick renews all
// their locks.
func ExampleSession() {
	b := memory.New()
	cand, err := campaign.NewSession(b, campaign.WithID("node-1"))
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- cand.Run(ctx) }()

	var cs []*campaign.Campaign
	for _, tenant := range []string{"acme", "globex"} {
		c, err := cand.Campaign("rollup/" + tenant) // running: no goroutine needed
		if err != nil {
			panic(err)
		}
		cs = append(cs, c)
		e := <-c.Events()
		fmt.Println(e.Name, e.Kind, e.Holder)
	}
	for _, c := range cs {
		if err := c.Close(); err != nil {
			panic(err)
		}
	}
	if err := cand.Close(); err != nil { // after the campaigns: it ends their session
		panic(err)
	}
	fmt.Println("Run:", <-done)
	// Output:
	// rollup/acme elected node-1
	// rollup/globex elected node-1
	// Run: campaign: closed
}
