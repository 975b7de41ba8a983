package elector

import (
	"context"
	"fmt"
	"sync"

	"github.com/hustings/hustings/events"
)

// WhileLeader runs e and calls fn for each term in the calling goroutine;
// package campaign documents it.
func WhileLeader(ctx context.Context, e *Elector, fn func(ctx context.Context, term events.Event) error) error {
	if err := CheckContext(ctx); err != nil {
		return err
	}
	if fn == nil {
		return fmt.Errorf("%w: nil function", ErrInvalid)
	}
	elected := e.electedSignal()
	var wg sync.WaitGroup
	defer wg.Wait()
	// Stopped before the wait: a panic in fn, which goes on up to the
	// caller, ends the run (and with it the term and the lock) instead of
	// waiting for it for ever.
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	runErr := make(chan error, 1)
	wg.Go(func() { runErr <- e.Run(rctx) })
	var last events.Token // the term fn last ran for
	for {
		select {
		case err := <-runErr:
			return err
		case <-elected:
		}
		tctx, ev, done, ok := e.Term(0)
		if !ok || ev.Token == last {
			if ok {
				done()
			}
			continue // the term ended before we got to it, or fn ran for it
		}
		last = ev.Token
		err := work(tctx, ev, fn, done)
		if err != nil && tctx.Err() == nil {
			e.cfg.Logger.Warn("work failed; resigning", "name", e.name, "token", ev.Token, "err", err)
			_ = e.resign(ctx, ev.Token)
		}
	}
}

// work calls fn for a term and then done, even if fn panics.
func work(ctx context.Context, ev events.Event, fn func(context.Context, events.Event) error, done func()) error {
	defer done()
	return fn(ctx, ev)
}
