package campaign_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
)

// A campaign's events: Elected once the backend confirmed the lock, with
// the term's context to bind work to; Revoked when the term ends. The
// README's tour shows this Example.
func Example_events() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := memory.New() // the embedded default; share one per process
	c, err := campaign.New(b, "reconcile", campaign.WithID("node-1"))
	if err != nil {
		panic(err) // bad input is rejected here, with campaign.ErrInvalid
	}
	go c.Run(ctx) // campaigns until ctx ends or c.Close()

	for e := range c.Events() { // closed when Run returns
		switch e.Kind {
		case events.Elected: // the backend confirmed it; e.Token fences writes
			workCtx, _, done, ok := c.Term(e.Token) // cancelled when the term ends
			fmt.Println("elected, token", e.Token, ok)
			cancel() // for the example: stop campaigning
			<-workCtx.Done()
			done()
		case events.Revoked: // e.Reason: resigned, lease expired, unreachable, ...
			fmt.Println("revoked:", e.Reason)
		}
	}
	// Output:
	// elected, token 1 true
	// revoked: events: resigned: context canceled
}

// Work under WhileLeader writes through the lock's store with the term's
// token, which refuses the write once another term began. The README's
// tour shows this Example.
func ExampleWhileLeader_fenced() {
	b := memory.New()
	c, err := campaign.New(b, "poller", campaign.WithID("node-1"))
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	state := 0
	err = campaign.WhileLeader(ctx, c, func(ctx context.Context, term events.Event) error {
		for ctx.Err() == nil { // ctx ends with the term
			// A term can end between this check and the write (a GC pause, a
			// stopped VM): the write goes through the lock's store with the
			// token, which refuses it once another term began.
			err := b.Fence(ctx, term.Name, term.Token, func() error { state++; return nil })
			if errors.Is(err, backends.ErrNotHeld) {
				return nil // the term is over
			}
			if state == 3 {
				cancel()     // for the example: stop after three writes,
				<-ctx.Done() // which ends the term
			}
		}
		return nil
	})
	if errors.Is(err, context.Canceled) {
		fmt.Println("a normal stop after", state, "writes")
	}
	// Output: a normal stop after 3 writes
}

// A one-shot run's result tells "ran", "skipped" and "action failed"
// apart. The README's tour shows this Example.
func ExampleRunIfLeader_outcomes() {
	ctx := context.Background()
	b := memory.New()
	migrate := func(ctx context.Context, token events.Token) (string, error) { return "schema v2", nil }
	res, err := campaign.RunIfLeader(ctx, b, "migrate", func(ctx context.Context, token events.Token) (string, error) {
		return migrate(ctx, token) // on PostgreSQL, each write in a transaction that runs pg.Fence(ctx, tx, "migrate", token) first
	}, campaign.WithMinHold(time.Minute))
	switch {
	case err != nil: // migrate did not run: backend failure, bad input, or ctx ended first
		fmt.Println("did not run:", err)
	case res.Outcome == campaign.Skipped: // normal: someone else has it
		fmt.Println("skipped")
	case res.Outcome == campaign.ActionFailed: // res.Err is migrate's error
		fmt.Println("failed:", res.Err)
	default: // campaign.Succeeded: res.Value, res.Token
		fmt.Println(res.Outcome, res.Value, res.Token)
	}
	// Output: succeeded schema v2 1
}
