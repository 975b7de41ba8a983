package main

// Scenario "cache-warmer": after a deploy, a cache of 8 partitions must be
// warmed, each partition once, and faster than one replica could do it
// alone. One lock per partition does both: every replica walks all the
// partitions (each from its own starting point) and warms those whose lock
// it gets, under RunIfLeader; the others it skips. The minimum hold keeps a
// partition's lock after its warm-up, so a replica that reaches it later
// skips it instead of warming it again.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
)

const (
	cacheWarmPartitions = 8
	cacheWarmTime       = 100 * time.Millisecond // to warm one partition
	cacheWarmHold       = 2 * time.Second        // longer than the whole warm-up takes
	// cacheWarmLease bounds one partition's warm-up, and frees the partition
	// of a replica that dies warming it. ZooKeeper caps it at its session
	// timeout, so not the 30s default.
	cacheWarmLease = 3 * time.Second
)

// cacheWarmLog records who warmed which partition.
type cacheWarmLog struct {
	mu    sync.Mutex
	by    map[int][]string // partition → replicas that warmed it
	skips int
}

func (l *cacheWarmLog) warmed(p int, id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.by[p] = append(l.by[p], id)
}

func (l *cacheWarmLog) skipped() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.skips++
}

func cacheWarmScenario(ctx context.Context, env *scenarioEnv) error {
	b, closeBackend, err := env.backend.open(ctx)
	if err != nil {
		return err
	}
	defer closeBackend()
	prefix := fmt.Sprintf("scenario-cache-warmer-%x", time.Now().UnixNano())
	ids := []string{"alpha", "bravo", "charlie"}
	env.tl.note("%d replicas warm %d cache partitions, one lock each (minimum hold %v)", len(ids), cacheWarmPartitions, cacheWarmHold)

	tally := &cacheWarmLog{by: map[int][]string{}}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for i, id := range ids {
		wg.Go(func() {
			// Starting points spread out, so the replicas meet late.
			if err := cacheWarmReplica(ctx, env.tl, b, prefix, id, i*cacheWarmPartitions/len(ids), tally); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("%s: %w", id, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return cacheWarmVerdict(env.tl, tally)
}

// cacheWarmReplica walks every partition from start and warms those whose
// lock it gets.
func cacheWarmReplica(ctx context.Context, tl *timeline, b backends.Backend, prefix, id string, start int, tally *cacheWarmLog) error {
	for k := range cacheWarmPartitions {
		p := (start + k) % cacheWarmPartitions
		warm := func(ctx context.Context, token events.Token) (struct{}, error) {
			tl.note("%s warms partition %d (token %d)", id, p, token)
			tally.warmed(p, id)
			select {
			case <-ctx.Done():
				return struct{}{}, ctx.Err()
			case <-time.After(cacheWarmTime): // loading the partition's hot keys
				return struct{}{}, nil
			}
		}
		res, err := cacheWarmTry(ctx, b, fmt.Sprintf("%s/partition-%d", prefix, p), warm,
			campaign.WithID(id), campaign.WithTTL(cacheWarmLease), campaign.WithMinHold(cacheWarmHold))
		switch {
		case err != nil:
			return err
		case res.Outcome == campaign.ActionFailed:
			return res.Err
		case res.Outcome == campaign.Skipped:
			tally.skipped() // another replica has it, or had it
		}
	}
	return nil
}

// cacheWarmTry is RunIfLeader, tried again for a while if the backend
// cannot be reached (a connection still being set up, say): until then
// the run is undecided, not skipped.
func cacheWarmTry(ctx context.Context, b backends.Backend, name string, fn func(context.Context, events.Token) (struct{}, error), opts ...campaign.Option) (res campaign.Result[struct{}], err error) {
	for range 20 {
		res, err = campaign.RunIfLeader(ctx, b, name, fn, opts...)
		if !errors.Is(err, backends.ErrUnavailable) {
			break
		}
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(cacheWarmTime):
		}
	}
	return res, err
}

// cacheWarmVerdict fails unless every partition was warmed exactly once,
// and by more than one replica in all.
func cacheWarmVerdict(tl *timeline, tally *cacheWarmLog) error {
	tally.mu.Lock()
	defer tally.mu.Unlock()
	perReplica := map[string]int{}
	var bad []int
	for p := range cacheWarmPartitions {
		if len(tally.by[p]) != 1 {
			bad = append(bad, p)
		}
		for _, id := range tally.by[p] {
			perReplica[id]++
		}
	}
	var shares []string
	for _, id := range slices.Sorted(maps.Keys(perReplica)) {
		shares = append(shares, fmt.Sprintf("%s %d", id, perReplica[id]))
	}
	tl.note("partitions warmed: %d of %d exactly once; by replica: %v; %d tries skipped", cacheWarmPartitions-len(bad), cacheWarmPartitions, shares, tally.skips)
	if len(bad) > 0 || len(perReplica) < 2 {
		return fmt.Errorf("cache-warmer: partitions %v not warmed exactly once, or only %d replica(s) warmed any", bad, len(perReplica))
	}
	return nil
}
