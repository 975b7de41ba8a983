// Command demo shows Hustings at work on the embedded memory backend, with
// no server: three candidates campaign for one lock, the leader resigns and
// another takes over in milliseconds, then the new leader "crashes" (its
// backend calls hang) and is revoked at its local deadline, before a third
// takes over. It prints the events as a timeline and exits by itself.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
)

const (
	lockName = "reconcile"
	ttl      = 2 * time.Second
	retry    = 250 * time.Millisecond
)

func main() {
	// The only place in Hustings that builds a root context from signals.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

// node is one candidate of the demo.
type node struct {
	c    *campaign.Campaign
	done chan error
}

func run(ctx context.Context, w io.Writer) error {
	b := memory.New()
	tl := newTimeline(w)
	tl.note("three candidates campaign for %q on the memory backend (TTL %v, retry %v)", lockName, ttl, retry)
	tl.header()

	elected := make(chan events.Event, 16)
	var readers sync.WaitGroup
	nodes := map[string]*node{}
	for _, id := range []string{"alpha", "bravo", "charlie"} {
		c, err := campaign.New(b, lockName, campaign.WithID(id), campaign.WithTTL(ttl), campaign.WithRetry(retry))
		if err != nil {
			return err
		}
		n := &node{c: c, done: make(chan error, 1)}
		nodes[id] = n
		go func() { n.done <- c.Run(ctx) }()
		readers.Go(func() {
			for e := range c.Events() {
				tl.event(e)
				if e.Kind == events.Elected {
					elected <- e
				}
			}
		})
	}
	defer func() {
		// Followers first, so that nobody takes over from the closing leader.
		for _, leading := range []bool{false, true} {
			for _, n := range nodes {
				if n.c.State().Leader == leading {
					n.c.Close()
				}
			}
		}
		for _, n := range nodes {
			n.c.Close()
		}
		readers.Wait()
	}()

	first, err := await(ctx, elected)
	if err != nil {
		return err
	}
	tl.note("%s leads; it resigns now", first.Holder)
	resigned := time.Now()
	if err := nodes[first.Holder].c.Resign(ctx); err != nil {
		return err
	}
	second, err := await(ctx, elected)
	if err != nil {
		return err
	}
	tl.note("handover in %v: the waiters were woken by the release, not by polling", since(resigned))

	tl.note("%s crashes: its calls to the backend hang from now on", second.Holder)
	crashed := time.Now()
	b.Partition(second.Holder)
	third, err := await(ctx, elected)
	if err != nil {
		return err
	}
	b.Heal(second.Holder)
	tl.note("%s took over %v after the crash (TTL %v + retry); %s had revoked itself at its deadline first",
		third.Holder, since(crashed), ttl, second.Holder)
	tl.note("fencing tokens only grow: %d, %d, %d", first.Token, second.Token, third.Token)
	tl.note("closing every campaign")
	return nil
}

// await returns the next Elected event.
func await(ctx context.Context, elected <-chan events.Event) (events.Event, error) {
	select {
	case e := <-elected:
		return e, nil
	case <-time.After(time.Minute):
		return events.Event{}, fmt.Errorf("nobody was elected within a minute")
	case <-ctx.Done():
		return events.Event{}, ctx.Err()
	}
}

func since(t time.Time) time.Duration { return time.Since(t).Round(100 * time.Microsecond) }
