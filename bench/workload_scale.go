package main

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/bsm/redislock"

	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
)

// startBatch is how many campaigns start at once in the scale workload:
// each watches its lock until elected, so starting 10,000 at once would
// open 10,000 watches (on Redis, pub/sub connections) at once.
const startBatch = 250

// footprint is the process's live heap and goroutine stacks, and its
// goroutines, after two garbage collections.
type footprint struct {
	heap, stacks int64
	goroutines   int
}

func measure() footprint {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return footprint{heap: int64(m.HeapAlloc), stacks: int64(m.StackInuse), goroutines: runtime.NumGoroutine()}
}

// scale holds 1 to 10,000 campaigns in this process on one shared session
// and reports, per campaign, the heap and stack bytes and goroutines they
// add, and the backend requests per second while they hold; on Redis,
// beside redislock refreshing as many locks.
func (b *bench) scale(ctx context.Context, s *system) error {
	for _, n := range b.cfg.Scale {
		row, err := b.holdCampaigns(ctx, s, n)
		if err != nil {
			return fmt.Errorf("%d campaigns: %w", n, err)
		}
		b.report.Add(row)
		b.logf("  hustings  %6d campaigns: %s B and %.2f goroutines each, %s requests/s", n,
			fmtNum(row.Values["bytes_per_campaign"]), row.Values["goroutines_per_campaign"], fmtNum(row.Values["requests_per_s"]))
	}
	if s.redisClient == nil {
		return nil
	}
	for _, n := range b.cfg.Scale {
		row, err := b.holdRedislocks(ctx, s, n)
		if err != nil {
			return fmt.Errorf("redislock, %d locks: %w", n, err)
		}
		b.report.Add(row)
		b.logf("  redislock %6d locks:     %s B and %.2f goroutines each, %s requests/s", n,
			fmtNum(row.Values["bytes_per_campaign"]), row.Values["goroutines_per_campaign"], fmtNum(row.Values["requests_per_s"]))
	}
	return nil
}

// holdCampaigns starts n campaigns on one candidate, waits until each is
// elected, measures, and closes them.
func (b *bench) holdCampaigns(ctx context.Context, s *system, n int) (Row, error) {
	before := measure()
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cand, err := campaign.NewCandidate(s.backend, campaign.WithID(fmt.Sprint("scale-", n)), campaign.WithTTL(b.cfg.ScaleTTL))
	if err != nil {
		return Row{}, err
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cand.Close()
	wg.Go(func() { _ = cand.Run(rctx) })
	cs := make([]*campaign.Campaign, 0, n)
	defer closeAll(&cs)
	started := time.Now()
	for i := 0; i < n; i += startBatch {
		for j := i; j < min(i+startBatch, n); j++ {
			c, err := campaign.New(s.backend, fmt.Sprintf("scale-%d/%d", n, j), campaign.WithCandidate(cand))
			if err != nil {
				return Row{}, err
			}
			cs = append(cs, c)
			wg.Go(func() { _ = c.Run(rctx) })
		}
		for _, c := range cs[i:] {
			if err := awaitElected(ctx, c); err != nil {
				return Row{}, err
			}
		}
	}
	b.logf("  %d campaigns elected in %v", n, time.Since(started).Round(time.Millisecond))
	sleep(ctx, time.Second) // let watches and calls of the start wind down
	held := measure()
	rate, err := b.requestRate(ctx, s)
	if err != nil {
		return Row{}, err
	}
	leaders := 0
	for _, c := range cs {
		if c.State().Leader {
			leaders++
		}
	}
	if leaders != n {
		return Row{}, fmt.Errorf("only %d of %d campaigns still lead after %v", leaders, n, b.cfg.HoldWindow)
	}
	return scaleRow(s, "hustings campaigns", n, before, held, rate), ctx.Err()
}

// awaitElected waits for c's first event, which must be Elected.
func awaitElected(ctx context.Context, c *campaign.Campaign) error {
	select {
	case e := <-c.Events():
		if e.Kind != events.Elected {
			return fmt.Errorf("%s: first event %v", c.Name(), e)
		}
		return nil
	case <-time.After(eventTimeout):
		return fmt.Errorf("%s: not elected within %v", c.Name(), eventTimeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// closeAll closes the campaigns, 32 at a time (each releases its lock).
func closeAll(cs *[]*campaign.Campaign) {
	work := make(chan *campaign.Campaign)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for c := range work {
				_ = c.Close()
			}
		})
	}
	for _, c := range *cs {
		work <- c
	}
	close(work)
	wg.Wait()
}

// requestRate counts the server's requests over the hold window, per
// second; 0 for a backend without a count.
func (b *bench) requestRate(ctx context.Context, s *system) (float64, error) {
	if s.requests == nil {
		sleep(ctx, b.cfg.HoldWindow)
		return 0, nil
	}
	r0, err := s.requests(ctx)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	sleep(ctx, b.cfg.HoldWindow)
	r1, err := s.requests(ctx)
	if err != nil {
		return 0, err
	}
	return float64(r1-r0) / time.Since(start).Seconds(), nil
}

func scaleRow(s *system, subject string, n int, before, held footprint, rate float64) Row {
	return Row{Workload: "scale", Backend: s.name, Subject: subject, Param: fmt.Sprint(n),
		Values: map[string]float64{
			"locks":                   float64(n),
			"bytes_per_campaign":      float64(held.heap+held.stacks-before.heap-before.stacks) / float64(n),
			"heap_per_campaign":       float64(held.heap-before.heap) / float64(n),
			"stack_per_campaign":      float64(held.stacks-before.stacks) / float64(n),
			"goroutines_per_campaign": float64(held.goroutines-before.goroutines) / float64(n),
			"goroutines":              float64(held.goroutines - before.goroutines),
			"requests_per_s":          rate,
		}}
}

// holdRedislocks obtains n redislock locks and refreshes each every
// ScaleTTL/3 from one loop, the least a holder of n redislock locks must
// send; measured as holdCampaigns is.
func (b *bench) holdRedislocks(ctx context.Context, s *system, n int) (Row, error) {
	before := measure()
	rl := redislock.New(s.redisClient)
	locks := make([]*redislock.Lock, 0, n)
	defer func() {
		for _, l := range locks {
			_ = l.Release(context.WithoutCancel(ctx))
		}
	}()
	for i := range n {
		l, err := rl.Obtain(ctx, fmt.Sprintf("peer:scale-%d/%d", n, i), b.cfg.ScaleTTL, nil)
		if err != nil {
			return Row{}, err
		}
		locks = append(locks, l)
	}
	rctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	wg.Go(func() { errs <- refreshLoop(rctx, locks, b.cfg.ScaleTTL) })
	sleep(ctx, time.Second)
	held := measure()
	rate, err := b.requestRate(ctx, s)
	cancel()
	wg.Wait()
	if rerr := <-errs; rerr != nil && rctx.Err() == nil {
		return Row{}, rerr
	}
	if err != nil {
		return Row{}, err
	}
	return scaleRow(s, "redislock", n, before, held, rate), ctx.Err()
}

// refreshLoop refreshes every lock each ttl/3 until ctx ends.
func refreshLoop(ctx context.Context, locks []*redislock.Lock, ttl time.Duration) error {
	t := time.NewTicker(ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		for _, l := range locks {
			if err := l.Refresh(ctx, ttl, nil); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
		}
	}
}
