package main

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
)

// runWatch prints a line for each lock's holder as first seen, then one
// per change, until ctx ends (exitOK). Reads that fail meanwhile are
// logged on stderr and retried; the last holder seen stands.
func runWatch(ctx context.Context, c *cli, args []string) int {
	var f flags
	rest, code, ok := c.parse("watch", args, &f, true)
	if !ok {
		return code
	}
	names, code, ok := c.lockNames("watch", rest, f.slots)
	if !ok {
		return code
	}
	b, closeStore, code, ok := c.connect(ctx, f)
	if !ok {
		return code
	}
	defer closeStore()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	logs := slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	changes := make(chan events.Event)
	var wg sync.WaitGroup
	defer wg.Wait() // after cancel: each Observe closes its channel when ctx ends
	for _, name := range names {
		ch, err := campaign.Observe(ctx, b, name, campaign.WithLogger(logs))
		if err != nil {
			return c.fail(exitFailure, "watch %s: %v", name, err)
		}
		wg.Go(func() {
			for e := range ch {
				select {
				case changes <- e:
				case <-ctx.Done():
				}
			}
		})
	}
	for {
		select {
		case <-ctx.Done():
			return exitOK
		case e := <-changes:
			l := line{Time: e.Time, Name: e.Name, Holder: e.Holder, Token: e.Token}
			if e.Holder != "" {
				l.Expires, l.Session = termOf(ctx, b, e, f.timeout)
			}
			l.print(c.stdout, f.json, time.Now())
		}
	}
}

// termOf reads what the store says of the term e reports, if it still
// lasts; zero values if it does not or the read fails (watch goes on).
func termOf(ctx context.Context, b backends.Backend, e events.Event, timeout time.Duration) (time.Time, string) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	h, err := b.Holder(ctx, e.Name)
	if err != nil || h.ID != e.Holder || h.Token != e.Token {
		return time.Time{}, ""
	}
	return h.Expires, h.Session
}
