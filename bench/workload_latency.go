package main

import (
	"context"
	"fmt"
	"time"

	"github.com/hustings/hustings/backends"
)

// subject is one thing timed in the acquire + release workload: op runs
// once per sample.
type subject struct {
	name string
	op   func(ctx context.Context) error
}

// rounds splits each subject's samples into rounds that take turns, so a
// burst of noise on the shared machine hits every subject alike.
const rounds = 4

// acquireRelease times acquire + release of a free lock: Hustings'
// session calls and RunIfLeader, the server's plain read and write, and
// each peer's lock + unlock, and reports each against the read and the
// write.
func (b *bench) acquireRelease(ctx context.Context, s *system) error {
	subjects, chores, cleanup, err := b.latencySubjects(ctx, s)
	defer cleanup()
	if err != nil {
		return err
	}
	samples := make([][]time.Duration, len(subjects))
	per := max(b.cfg.Samples/rounds, 1)
	for range rounds {
		for i, sub := range subjects {
			for j := range per {
				if err := chores(ctx); err != nil {
					return fmt.Errorf("keep-alive: %w", err)
				}
				start := time.Now()
				if err := sub.op(ctx); err != nil {
					return fmt.Errorf("%s (sample %d): %w", sub.name, j, err)
				}
				samples[i] = append(samples[i], time.Since(start))
			}
		}
	}
	dists := make(map[string]Dist, len(subjects))
	for i, sub := range subjects {
		dists[sub.name] = Summarize(samples[i])
	}
	for _, sub := range subjects {
		d := dists[sub.name]
		row := Row{Workload: "acquire-release", Backend: s.name, Subject: sub.name, Latency: &d}
		if s.read != nil {
			row.Values = map[string]float64{
				"x_read":  ratio(float64(d.P50), float64(dists[s.readName].P50)),
				"x_write": ratio(float64(d.P50), float64(dists[s.writeName].P50)),
			}
			row.Baseline, row.Ratio = s.readName, row.Values["x_read"]
		}
		b.report.Add(row)
		b.logf("  %-30s p50 %-9s p99 %s", sub.name, fmtDur(d.P50), fmtDur(d.P99))
	}
	return nil
}

// latencySubjects sets up what acquireRelease times on s; chores, run
// untimed before every sample, keep the session alive (a ZooKeeper TTL is
// shorter than a run); cleanup undoes it all, also after an error.
func (b *bench) latencySubjects(ctx context.Context, s *system) (subjects []subject, chores func(context.Context) error, cleanup func(), err error) {
	var closers []func()
	cleanup = func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	sess, err := s.backend.Open(ctx, "bench-latency", s.maxTTL)
	if err != nil {
		return nil, nil, cleanup, err
	}
	closers = append(closers, func() { _ = sess.Close(context.WithoutCancel(ctx)) })
	renewed := time.Now()
	chores = func(ctx context.Context) error {
		if time.Since(renewed) < s.maxTTL/4 {
			return nil
		}
		renewed = time.Now()
		return sess.KeepAlive(ctx)
	}
	subjects = []subject{{
		name: "hustings Acquire + Release",
		op:   func(ctx context.Context) error { return acquireRelease(ctx, sess, "bench-latency") },
	}}
	one := hustingsLocker{b: s.backend}
	waiting := hustingsLocker{b: s.backend, wait: contendedWait}
	subjects = append(subjects, subject{
		name: "hustings RunIfLeader",
		op:   func(ctx context.Context) error { return one.run(ctx, "bench-latency-once", func() {}) },
	}, subject{
		name: "hustings RunIfLeader WithWait",
		op:   func(ctx context.Context) error { return waiting.run(ctx, "bench-latency-once", func() {}) },
	})
	if s.read != nil {
		subjects = append(subjects, subject{name: s.readName, op: s.read}, subject{name: s.writeName, op: s.write})
	}
	for _, p := range s.peers {
		l, err := p.open(ctx)
		if err != nil {
			return nil, nil, cleanup, fmt.Errorf("%s: %w", p.name, err)
		}
		closers = append(closers, l.close)
		subjects = append(subjects, subject{
			name: p.name,
			op:   func(ctx context.Context) error { return l.run(ctx, "bench-latency", func() {}) },
		})
	}
	// One untimed pass: connections, cached scripts, parent nodes.
	for _, sub := range subjects {
		if err := sub.op(ctx); err != nil {
			return nil, nil, cleanup, fmt.Errorf("%s: warm-up: %w", sub.name, err)
		}
	}
	return subjects, chores, cleanup, nil
}

// acquireRelease takes the free lock name and releases it.
func acquireRelease(ctx context.Context, sess backends.Session, name string) error {
	tok, err := sess.Acquire(ctx, name, 0)
	if err != nil {
		return err
	}
	return sess.Release(ctx, name, tok, 0)
}
