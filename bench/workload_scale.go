package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bsm/redislock"

	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
)

// redislockScaleMax is the most locks the redislock peer holds: one loop
// refreshes 10,000 locks in about 0.3 s here, so a round of 100,000 would
// take about 3 s, longer than the TTL/3 between rounds and as long as the
// TTL.
const redislockScaleMax = 10_000

// electLimit is how long n campaigns started at once may take to be
// elected before the point is reported as a miss; electLimitText says it.
func electLimit(n int) time.Duration { return 30*time.Second + time.Duration(n)*time.Millisecond }

const electLimitText = "30 s + 1 ms a campaign"

// scale holds 1 to 100,000 campaigns in this process on one shared
// session, each point's campaigns started all at once, and reports per
// campaign the heap and stack bytes and goroutines they add, and the
// backend requests per second while they hold; on Redis, beside redislock
// refreshing as many locks.
func (b *bench) scale(ctx context.Context, s *system) error {
	if err := b.warmUp(ctx, s); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	for _, n := range b.scalePoints(s) {
		row, err := b.holdCampaigns(ctx, s, n)
		if err != nil {
			return fmt.Errorf("%d campaigns: %w", n, err)
		}
		b.report.Add(row)
		v := row.Values
		b.logf("  hustings  %7d campaigns: %s elected in %v; %s B and %.2f goroutines each, %s requests/s", n, fmtNum(v["elected"]),
			time.Duration(v["elect_ns"]).Round(time.Millisecond), fmtNum(v["bytes_per_campaign"]), v["goroutines_per_campaign"], fmtNum(v["requests_per_s"]))
	}
	if s.kube != nil {
		return b.scaleLeaseLocks(ctx, s)
	}
	if s.redisClient == nil {
		return nil
	}
	for _, n := range b.cfg.Scale {
		if n > redislockScaleMax {
			continue
		}
		row, err := b.holdRedislocks(ctx, s, n)
		if err != nil {
			return fmt.Errorf("redislock, %d locks: %w", n, err)
		}
		b.report.Add(row)
		b.logf("  redislock %7d locks:     %s B and %.2f goroutines each, %s requests/s", n,
			fmtNum(row.Values["bytes_per_campaign"]), row.Values["goroutines_per_campaign"], fmtNum(row.Values["requests_per_s"]))
	}
	return nil
}

// scalePoints returns the numbers of campaigns to hold on s: the
// configured ones up to s's ceiling, if it has one.
func (b *bench) scalePoints(s *system) []int {
	var out []int
	for _, n := range b.cfg.Scale {
		if ceiling := b.cfg.ScaleMax[s.name]; ceiling == 0 || n <= ceiling {
			out = append(out, n)
		}
	}
	return out
}

// warmUpCampaigns is how many campaigns warmUp starts at once: enough to
// grow the client's connection pool to its size (go-redis: 10 per CPU).
const warmUpCampaigns = 100

// warmUp elects and closes warmUpCampaigns campaigns, started at once, on
// a candidate of its own, so that what a process sets up once (package
// state, the client's connection pool) is not charged to the first points.
func (b *bench) warmUp(ctx context.Context, s *system) error {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cand, err := campaign.NewSession(s.backend, campaign.WithID("scale-warm-up"), campaign.WithTTL(b.cfg.ScaleTTL))
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cand.Close()
	cs := make([]*campaign.Campaign, 0, warmUpCampaigns)
	defer closeAll(&cs)
	wg.Go(func() { _ = cand.Run(rctx) })
	for i := range warmUpCampaigns {
		c, err := cand.Campaign(fmt.Sprint("scale-warm-up/", i))
		if err != nil {
			return err
		}
		cs = append(cs, c)
	}
	n, err := b.awaitElected(ctx, cs, eventTimeout)
	if err == nil && n < len(cs) {
		err = fmt.Errorf("%d of %d elected within %v", n, len(cs), eventTimeout)
	}
	return err
}

// holdCampaigns starts n campaigns on one candidate all at once, waits
// until each is elected (or electLimit passes), measures, and closes
// them. A point whose campaigns are not all elected in time, or do not all
// lead to the end, is reported as it is, with the counts.
func (b *bench) holdCampaigns(ctx context.Context, s *system, n int) (Row, error) {
	before := b.settle(ctx, "before")
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cand, err := campaign.NewSession(s.backend, campaign.WithID(fmt.Sprint("scale-", n)), campaign.WithTTL(b.cfg.ScaleTTL))
	if err != nil {
		return Row{}, err
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cand.Close()
	cs := make([]*campaign.Campaign, 0, n)
	defer closeAll(&cs)
	started := time.Now()
	wg.Go(func() { _ = cand.Run(rctx) })
	for i := range n {
		c, err := cand.Campaign(fmt.Sprintf("scale-%d/%d", n, i)) // running, with no goroutine of ours
		if err != nil {
			return Row{}, err
		}
		cs = append(cs, c)
	}
	elected, err := b.awaitElected(ctx, cs, electLimit(n))
	if err != nil {
		return Row{}, err
	}
	took := time.Since(started)
	if elected < n {
		b.logf("  only %d of %d campaigns elected within %v; last error: %v", elected, n, electLimit(n), lastErr(cs))
	}
	var held footprint
	if elected < n {
		held = measure() // campaigns still trying: the count will not settle
	} else {
		// Held across a renewal: what a held campaign costs from then on
		// (on Redis, its session's loss watch follows the lock from its
		// first renewal), not only what its election left.
		sleep(ctx, b.cfg.ScaleTTL/3+200*time.Millisecond)
		held = b.settle(ctx, "holding")
	}
	rate, err := b.requestRate(ctx, s)
	if err != nil {
		return Row{}, err
	}
	leading := leaders(cs)
	row := scaleRow(s, "hustings campaigns", n, before, held, rate)
	row.Values["elected"], row.Values["elect_ns"], row.Values["elect_limit_ns"] = float64(elected), float64(took), float64(electLimit(n))
	row.Values["leading_after_hold"] = float64(leading)
	if leading < n {
		row.Note = lossNote(cs)
		b.logf("  %d of %d campaigns lead after the hold: %s", leading, n, row.Note)
	}
	return row, ctx.Err()
}

// awaitElected waits for each campaign's first event, or until limit has
// passed, and returns how many were elected: those whose first event came
// in time, and those leading when the time ran out. A first event that is
// Revoked (the term ended before it was read: the channel keeps the
// latest state) counts as elected; the hold's final count of leaders
// shows the loss. Every progressEvery it logs how many lead.
func (b *bench) awaitElected(ctx context.Context, cs []*campaign.Campaign, limit time.Duration) (int, error) {
	start := time.Now()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	tick := time.NewTicker(progressEvery)
	defer tick.Stop()
	for i := 0; i < len(cs); {
		select {
		case e := <-cs[i].Events():
			if e.Kind != events.Elected && e.Kind != events.Revoked {
				return i, fmt.Errorf("%s: first event %v", cs[i].State().Name, e)
			}
			i++
		case <-tick.C:
			b.logf("  %s of %s elected after %v; last error: %v", fmtNum(float64(i+leaders(cs[i:]))), fmtNum(float64(len(cs))),
				time.Since(start).Round(time.Second), lastErr(cs[i:]))
		case <-timer.C:
			return i + leaders(cs[i:]), nil
		case <-ctx.Done():
			return i, ctx.Err()
		}
	}
	return len(cs), nil
}

// progressEvery is how often awaitElected reports progress.
const progressEvery = 5 * time.Second

// leaders counts the campaigns of cs that lead.
func leaders(cs []*campaign.Campaign) int {
	n := 0
	for _, c := range cs {
		if c.State().Leader {
			n++
		}
	}
	return n
}

// heldAll tells whether every campaign of a scale row was elected in time
// and still led after the hold (true for rows from before these counts).
func heldAll(r Row) bool {
	v := r.Values
	e, ok := v["elected"]
	return !ok || e == v["locks"] && v["leading_after_hold"] == v["locks"]
}

// lossNote says why the campaigns of cs that do not lead lost: the
// reasons of their last Revoked event, most frequent first, and the last
// backend error.
func lossNote(cs []*campaign.Campaign) string {
	counts := map[string]int{}
	for _, c := range cs {
		st := c.State()
		switch {
		case st.Leader:
		case st.LastEvent.Kind == events.Revoked:
			counts["revoked: "+fmt.Sprint(st.LastEvent.Reason)]++
		default:
			counts["never elected"]++
		}
	}
	reasons := slices.Collect(maps.Keys(counts))
	slices.SortFunc(reasons, func(a, b string) int { return counts[b] - counts[a] })
	var parts []string
	for _, r := range reasons {
		parts = append(parts, fmt.Sprintf("%s %s", fmtNum(float64(counts[r])), r))
	}
	if err := lastErr(cs); err != nil {
		parts = append(parts, "last backend error: "+err.Error())
	}
	return strings.Join(parts, "; ")
}

// lastErr returns the last backend error of any of cs, or nil.
func lastErr(cs []*campaign.Campaign) error {
	for _, c := range cs {
		if err := c.State().Err; err != nil {
			return err
		}
	}
	return nil
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
	before := b.settle(ctx, "before")
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
	var longest atomic.Int64 // the longest refresh round, in ns
	wg.Go(func() { errs <- refreshLoop(rctx, locks, b.cfg.ScaleTTL, &longest) })
	held := b.settle(ctx, "holding")
	rate, err := b.requestRate(ctx, s)
	cancel()
	wg.Wait()
	if rerr := <-errs; rerr != nil && rctx.Err() == nil {
		return Row{}, rerr
	}
	if err != nil {
		return Row{}, err
	}
	row := scaleRow(s, "redislock", n, before, held, rate)
	row.Values["refresh_round_ns"] = float64(longest.Load())
	row.Note = fmt.Sprintf("longest refresh round %s (every %s)", fmtDur(time.Duration(longest.Load())), fmtDur(b.cfg.ScaleTTL/3))
	return row, ctx.Err()
}

// refreshLoop refreshes every lock each ttl/3 until ctx ends, and keeps
// the longest round's duration in longest.
func refreshLoop(ctx context.Context, locks []*redislock.Lock, ttl time.Duration, longest *atomic.Int64) error {
	t := time.NewTicker(ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		start := time.Now()
		for _, l := range locks {
			if err := l.Refresh(ctx, ttl, nil); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
		}
		if d := int64(time.Since(start)); d > longest.Load() {
			longest.Store(d)
		}
	}
}
