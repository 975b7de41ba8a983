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
	runErr := make(chan error, 1)
	wg.Go(func() { runErr <- e.Run(ctx) })
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
		err := fn(tctx, ev)
		done()
		if err != nil && tctx.Err() == nil {
			e.cfg.Logger.Warn("work failed; resigning", "name", e.name, "token", ev.Token, "err", err)
			_ = e.resign(ctx, ev.Token)
		}
	}
}
