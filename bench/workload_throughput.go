package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// throughputGoroutines are the concurrency levels of the throughput
// workload.
var throughputGoroutines = []int{1, 8}

// contenders is the number of candidates on one name in the contended
// workload.
const contenders = 8

// subjectsOf lists Hustings' RunIfLeader subjects (waiting for a held
// lock, or not) and then the peers of s.
func subjectsOf(s *system, wait bool) []peer {
	return append(hustingsSubjects(s, wait), s.peers...)
}

// throughput runs RunIfLeader (without a session, and on one) and each
// peer's lock + unlock in a loop from 1 and from 8 goroutines, each on a
// name of its own, through one client, and reports completed runs per
// second against the best peer.
func (b *bench) throughput(ctx context.Context, s *system) error {
	for _, g := range throughputGoroutines {
		param := fmt.Sprintf("%d goroutines", g)
		if g == 1 {
			param = "1 goroutine"
		}
		for _, p := range subjectsOf(s, false) {
			ops, err := b.loop(ctx, p, g)
			if err != nil {
				return fmt.Errorf("%s, %s: %w", p.name, param, err)
			}
			b.report.Add(Row{Workload: "throughput", Backend: s.name, Subject: p.name, Param: param, Values: map[string]float64{"ops_per_s": ops}})
			b.logf("  %-34s %-13s %s runs/s", p.name, param, fmtNum(ops))
		}
		b.rateAgainstBestPeer("throughput", s, param, "ops_per_s")
	}
	return nil
}

// loop runs p's lock + unlock in g goroutines on distinct names for the
// configured window and returns completed runs per second.
func (b *bench) loop(ctx context.Context, p peer, g int) (float64, error) {
	l, err := p.open(ctx)
	if err != nil {
		return 0, err
	}
	defer l.close()
	for i := range g { // warm-up: connections, scripts, parent nodes
		if err := l.run(ctx, fmt.Sprintf("tp-%d", i), func() {}); err != nil {
			return 0, err
		}
	}
	var done atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, g)
	start := time.Now()
	until := start.Add(b.cfg.Window)
	for i := range g {
		name := fmt.Sprintf("tp-%d", i)
		wg.Go(func() {
			for time.Now().Before(until) && ctx.Err() == nil {
				if err := l.run(ctx, name, func() {}); err != nil {
					errs <- err
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	return float64(done.Load()) / elapsed.Seconds(), ctx.Err()
}

// rateAgainstBestPeer sets the ratio of each Hustings row of workload on
// s (with param) to the best peer's value of key.
func (b *bench) rateAgainstBestPeer(workload string, s *system, param, key string) {
	var best *Row
	for _, p := range s.peers {
		r := b.report.Find(workload, s.name, p.name, param)
		if r != nil && (best == nil || r.Values[key] > best.Values[key]) {
			best = r
		}
	}
	if best == nil {
		return
	}
	for _, p := range hustingsSubjects(s, false) {
		if h := b.report.Find(workload, s.name, p.name, param); h != nil {
			h.Baseline, h.Ratio = best.Subject, ratio(h.Values[key], best.Values[key])
		}
	}
}

// contended runs 8 candidates, each with a client of its own, taking turns
// on one name for the configured window: completed critical sections per
// second, and how long candidates waited for the lock.
func (b *bench) contended(ctx context.Context, s *system) error {
	for _, p := range subjectsOf(s, true) {
		rate, waits, err := b.contend(ctx, p)
		if err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
		d := Summarize(waits)
		b.report.Add(Row{Workload: "contended", Backend: s.name, Subject: p.name, Param: fmt.Sprintf("%d candidates", contenders),
			Latency: &d, Values: map[string]float64{"cs_per_s": rate}})
		b.logf("  %-34s %s sections/s, wait p50 %s, longest %s", p.name, fmtNum(rate), fmtDur(d.P50), fmtDur(d.Max))
	}
	b.rateAgainstBestPeer("contended", s, "", "cs_per_s")
	return nil
}

// contend runs the contenders of p and returns sections per second and
// each section's wait.
func (b *bench) contend(ctx context.Context, p peer) (float64, []time.Duration, error) {
	var ls []locker
	defer func() {
		for _, l := range ls {
			l.close()
		}
	}()
	for range contenders {
		l, err := p.open(ctx)
		if err != nil {
			return 0, nil, err
		}
		ls = append(ls, l)
		if err := l.run(ctx, "contended", func() {}); err != nil { // warm-up
			return 0, nil, err
		}
	}
	// Waits past the window are bounded: a stuck library fails the run.
	rctx, cancel := context.WithTimeout(ctx, b.cfg.Window+time.Minute)
	defer cancel()
	var mu sync.Mutex
	var waits []time.Duration
	var wg sync.WaitGroup
	errs := make(chan error, contenders)
	start := time.Now()
	until := start.Add(b.cfg.Window)
	for _, l := range ls {
		wg.Go(func() {
			for time.Now().Before(until) && rctx.Err() == nil {
				asked := time.Now()
				err := l.run(rctx, "contended", func() {
					mu.Lock()
					waits = append(waits, time.Since(asked))
					mu.Unlock()
				})
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return 0, nil, err
	}
	return float64(len(waits)) / elapsed.Seconds(), waits, ctx.Err()
}
