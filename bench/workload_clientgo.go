package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/tools/leaderelection"
)

// clientGoScaleMax is the most Leases the client-go scale peer holds:
// each renews every retry period (2 s), so 1,000 are 500 writes a second
// already.
const clientGoScaleMax = 1_000

// clientGoFailovers measures client-go's crash failover on s, as failover
// measures Hustings': a leader whose requests start to hang and a waiter
// on a clientset of its own, from the crash to the waiter's
// OnStartedLeading; with client-go's defaults (the samples run side by
// side, each on a Lease of its own: a sample takes 15–20 s) and tuned to
// the failover workload's TTL and retry (one after another).
func (b *bench) clientGoFailovers(ctx context.Context, s *system) error {
	for _, c := range []struct {
		subject  string
		timing   leTiming
		parallel bool
	}{
		{clientGoName, clientGoDefaults, true},
		{clientGoTuned, tunedTiming(b.cfg.FailoverTTL, b.cfg.FailoverTry), false},
	} {
		samples := make([]time.Duration, b.cfg.Failovers)
		overlaps := make([]bool, b.cfg.Failovers)
		errs := make([]error, b.cfg.Failovers)
		var wg sync.WaitGroup
		for i := range b.cfg.Failovers {
			one := func() {
				samples[i], overlaps[i], errs[i] = clientGoFailOnce(ctx, s.kube, fmt.Sprintf("failover-%d", seq.Add(1)), c.timing)
			}
			if c.parallel {
				wg.Go(one)
			} else {
				one()
			}
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("%s: %w", c.subject, err)
		}
		unsafe := 0
		for _, o := range overlaps {
			if o {
				unsafe++
			}
		}
		d := Summarize(samples)
		b.report.Add(Row{Workload: "failover", Backend: s.name, Subject: c.subject + " crash → OnStartedLeading", Latency: &d,
			Param:    c.timing.String(),
			Values:   map[string]float64{"ttl_ns": float64(c.timing.lease), "overlaps": float64(unsafe)},
			Baseline: "lease", Ratio: ratio(float64(d.P99), float64(c.timing.lease))})
		b.logf("  %s crash → OnStartedLeading p50 %-9s p99 %s (%v); elected before the holder stopped leading: %d",
			c.subject, fmtDur(d.P50), fmtDur(d.P99), c.timing, unsafe)
	}
	return nil
}

// clientGoFailOnce runs one crash failover on the Lease name. overlap
// reports whether the waiter started leading before the crashed holder's
// OnStoppedLeading (after its renew deadline).
func clientGoFailOnce(ctx context.Context, k *kubeClients, name string, t leTiming) (time.Duration, bool, error) {
	ctx, cancel := context.WithCancel(quiet(ctx))
	defer cancel()
	var crashed atomic.Bool
	hcs, closeH, err := k.open(&crashed)
	if err != nil {
		return 0, false, err
	}
	defer closeH()
	wcs, closeW, err := k.open(nil)
	if err != nil {
		return 0, false, err
	}
	defer closeW()
	var stopped, started atomic.Int64 // UnixNano of the holder's stop, the waiter's start
	holderLeads, waiterLeads := make(chan struct{}), make(chan struct{})
	holder, err := newElector(hcs, name, "holder", t, false, leaderelection.LeaderCallbacks{
		OnStartedLeading: func(context.Context) { close(holderLeads) },
		OnStoppedLeading: func() { stopped.Store(time.Now().UnixNano()) },
	})
	if err != nil {
		return 0, false, err
	}
	waiter, err := newElector(wcs, name, "waiter", t, false, leaderelection.LeaderCallbacks{
		OnStartedLeading: func(context.Context) { started.Store(time.Now().UnixNano()); close(waiterLeads) },
		OnStoppedLeading: func() {},
	})
	if err != nil {
		return 0, false, err
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() { holder.Run(ctx) })
	if err := await(ctx, holderLeads, eventTimeout); err != nil {
		return 0, false, fmt.Errorf("holder: %w", err)
	}
	wg.Go(func() { waiter.Run(ctx) })
	// A random moment within the renewal cycle, once the waiter has read
	// the Lease.
	sleep(ctx, 200*time.Millisecond+time.Duration(rand.N(int64(t.retry))))
	start := time.Now()
	crashed.Store(true)
	if err := await(ctx, waiterLeads, 2*t.lease+eventTimeout); err != nil {
		return 0, false, fmt.Errorf("waiter: %w", err)
	}
	took := time.Since(start)
	s := stopped.Load()
	return took, s == 0 || s > started.Load(), nil
}

// await waits until ch is closed, for at most d.
func await(ctx context.Context, ch <-chan struct{}, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ch:
		return nil
	case <-timer.C:
		return fmt.Errorf("not leading within %v", d)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// scaleLeaseLocks holds as many Leases with client-go as the scale
// workload's points, up to clientGoScaleMax.
func (b *bench) scaleLeaseLocks(ctx context.Context, s *system) error {
	for _, n := range b.cfg.Scale {
		if n > clientGoScaleMax {
			continue
		}
		row, err := b.holdLeaseLocks(ctx, s, n)
		if err != nil {
			return fmt.Errorf("%s, %d Leases: %w", clientGoName, n, err)
		}
		b.report.Add(row)
		b.logf("  client-go %7d Leases:    %s B and %.2f goroutines each, %s writes/s", n,
			fmtNum(row.Values["bytes_per_campaign"]), row.Values["goroutines_per_campaign"], fmtNum(row.Values["requests_per_s"]))
	}
	return nil
}

// holdLeaseLocks holds n Leases with client-go LeaderElectors (its
// defaults, ReleaseOnCancel) on one clientset, as one controller process
// electing n leaders would; measured as holdCampaigns is.
func (b *bench) holdLeaseLocks(ctx context.Context, s *system, n int) (Row, error) {
	before := b.settle(ctx, "before")
	cs, closer, err := s.kube.open(nil)
	if err != nil {
		return Row{}, err
	}
	defer closer()
	rctx, cancel := context.WithCancel(quiet(ctx))
	var wg sync.WaitGroup
	defer wg.Wait() // each releases its Lease
	defer cancel()
	var leading atomic.Int64
	all := make(chan struct{})
	les := make([]*leaderelection.LeaderElector, 0, n)
	for i := range n {
		le, err := newElector(cs, fmt.Sprintf("peer-scale-%d-%d", n, i), "client-go-scale", clientGoDefaults, true, leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) {
				if leading.Add(1) == int64(n) {
					close(all)
				}
			},
			OnStoppedLeading: func() {},
		})
		if err != nil {
			return Row{}, err
		}
		les = append(les, le)
		wg.Go(func() { le.Run(rctx) })
	}
	started := time.Now()
	if err := await(ctx, all, electLimit(n)); err != nil {
		return Row{}, fmt.Errorf("%d of %d LeaderElectors leading: %w", leading.Load(), n, err)
	}
	took := time.Since(started)
	held := b.settle(ctx, "holding")
	rate, err := b.requestRate(ctx, s)
	if err != nil {
		return Row{}, err
	}
	still := 0
	for _, le := range les {
		if le.IsLeader() {
			still++
		}
	}
	row := scaleRow(s, clientGoName, n, before, held, rate)
	row.Values["elected"], row.Values["elect_ns"], row.Values["leading_after_hold"] = float64(n), float64(took), float64(still)
	row.Note = fmt.Sprintf("a LeaderElector per Lease (%v) on one clientset: each renews with one write per retry period", clientGoDefaults)
	return row, ctx.Err()
}
