package main

// Scenario "batch": a nightly job that every replica schedules, so that it
// still runs when any of them is down, yet runs exactly once per period.
// campaign.Every aligns each replica's schedule to the same windows, and
// in each window the replica that gets the lock runs the job and keeps the
// lock until just before the window ends, so a replica that wakes late
// skips instead of running the job a second time.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
)

const (
	batchPeriod  = 2 * time.Second       // a night, in the demo
	batchWindows = 3                     // whole windows watched
	batchJob     = 50 * time.Millisecond // how long the report takes
	// batchMargin ends each window's hold this long before the next window
	// opens. It must cover the backend's lease granularity: etcd rounds a
	// hold up to whole seconds and expires it up to half a second late, so
	// a smaller margin there would keep the lock into the next window.
	batchMargin = time.Second
)

// batchRun is one run of the job: the window it ran for and who ran it.
type batchRun struct {
	window time.Time
	id     string
}

func batchScenario(ctx context.Context, env *scenarioEnv) error {
	b, closeBackend, err := env.backend.open(ctx)
	if err != nil {
		return err
	}
	defer closeBackend()
	name := fmt.Sprintf("scenario-batch-%x/nightly-report", time.Now().UnixNano())

	// Judge whole windows only: the first one starts a little after now, so
	// every replica is already waiting for it.
	first := time.Now().Add(batchPeriod / 10).Truncate(batchPeriod).Add(batchPeriod)
	runCtx, stop := context.WithDeadline(ctx, first.Add(batchWindows*batchPeriod-batchPeriod/4))
	defer stop()
	env.tl.note("five replicas schedule the nightly report with campaign.Every, period %v (a night, in the demo); each window's lock is kept until %v before the next", batchPeriod, batchMargin)

	var (
		mu   sync.Mutex
		runs []batchRun
		errs []error
		wg   sync.WaitGroup
	)
	for _, id := range []string{"alpha", "bravo", "charlie", "delta", "echo"} {
		// The job is the same on every replica; Every decides who runs it.
		job := func(ctx context.Context, token events.Token) error {
			r := batchRun{time.Now().Truncate(batchPeriod), id}
			mu.Lock()
			runs = append(runs, r)
			mu.Unlock()
			env.tl.note("%s runs the report for window %s (token %d); the others skip it", id, r.window.Format("15:04:05"), token)
			select {
			case <-ctx.Done(): // the window's lease ran out: stop
				return ctx.Err()
			case <-time.After(batchJob):
				return nil
			}
		}
		wg.Go(func() {
			// Every returns when runCtx ends; any other error is bad input.
			if err := campaign.Every(runCtx, b, name, batchPeriod, job,
				campaign.WithID(id), campaign.WithSafetyMargin(batchMargin)); runCtx.Err() == nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("%s: %w", id, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := errors.Join(append(errs, ctx.Err())...); err != nil {
		return err
	}
	return batchVerdict(env.tl, runs, first)
}

// batchVerdict prints the runs of each window and fails unless every
// window watched, and every other window with a run, ran exactly once.
func batchVerdict(tl *timeline, runs []batchRun, first time.Time) error {
	byWindow := map[time.Time][]string{}
	for i := range batchWindows {
		byWindow[first.Add(time.Duration(i)*batchPeriod)] = nil
	}
	for _, r := range runs {
		byWindow[r.window] = append(byWindow[r.window], r.id)
	}
	var bad []string
	for _, w := range slices.SortedFunc(maps.Keys(byWindow), time.Time.Compare) {
		ids := byWindow[w]
		tl.note("window %s: %d run(s) %v", w.Format("15:04:05"), len(ids), ids)
		if len(ids) != 1 {
			bad = append(bad, w.Format("15:04:05"))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("batch: windows %v did not run exactly once", bad)
	}
	tl.note("%d windows, each run exactly once, by whichever replica got its lock first", len(byWindow))
	return nil
}
