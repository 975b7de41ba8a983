package etcd_test

import (
	"slices"
	"testing"
	"time"

	"github.com/hustings/hustings/backends/etcd/etcdtest"
)

// BenchmarkAcquireRelease: Acquire and Release of a free lock on an open
// session, two transactions; reports the median in p50-ns.
func BenchmarkAcquireRelease(b *testing.B) {
	be := newBackend(b, etcdtest.Start(b).Client(b))
	s := open(b, be, "bench", time.Minute)
	ctx := b.Context()
	times := make([]time.Duration, 0, b.N)
	for b.Loop() {
		start := time.Now()
		tok, err := s.Acquire(ctx, "bench", 0)
		if err != nil {
			b.Fatalf("Acquire: %v", err)
		}
		if err := s.Release(ctx, "bench", tok, 0); err != nil {
			b.Fatalf("Release: %v", err)
		}
		times = append(times, time.Since(start))
	}
	b.ReportMetric(p50(times), "p50-ns")
}

// BenchmarkRoundTrip: one plain Get of one key, the floor an Acquire is
// compared with; reports the median in p50-ns.
func BenchmarkRoundTrip(b *testing.B) {
	cli := etcdtest.Start(b).Client(b)
	ctx := b.Context()
	if _, err := cli.Put(ctx, "/bench/key", "value"); err != nil {
		b.Fatal(err)
	}
	times := make([]time.Duration, 0, b.N)
	for b.Loop() {
		start := time.Now()
		if _, err := cli.Get(ctx, "/bench/key"); err != nil {
			b.Fatalf("Get: %v", err)
		}
		times = append(times, time.Since(start))
	}
	b.ReportMetric(p50(times), "p50-ns")
}

// BenchmarkPutRoundTrip: one Put of one key, a write that, like each
// transaction of Acquire and Release, waits for etcd's fsync; for
// comparison only.
func BenchmarkPutRoundTrip(b *testing.B) {
	cli := etcdtest.Start(b).Client(b)
	ctx := b.Context()
	times := make([]time.Duration, 0, b.N)
	for b.Loop() {
		start := time.Now()
		if _, err := cli.Put(ctx, "/bench/key", "value"); err != nil {
			b.Fatalf("Put: %v", err)
		}
		times = append(times, time.Since(start))
	}
	b.ReportMetric(p50(times), "p50-ns")
}

// BenchmarkOneShot: a run without a session, as campaign.RunIfLeader
// makes one (Open, Acquire, Close: a lease grant, the acquiring
// transaction and a revoke, each waiting for etcd's fsync), each followed
// by a plain Put of one key. It reports the medians of both in p50-ns and
// p50-put-ns, and the run's median in Puts as puts/run: the Puts,
// interleaved with the runs, see the same load, so the ratio stays
// comparable on a shared machine where the times do not.
func BenchmarkOneShot(b *testing.B) {
	cli := etcdtest.Start(b).Client(b)
	be := newBackend(b, cli)
	ctx := b.Context()
	runs := make([]time.Duration, 0, b.N)
	puts := make([]time.Duration, 0, b.N)
	for b.Loop() {
		start := time.Now()
		s, err := be.Open(ctx, "bench", time.Minute)
		if err != nil {
			b.Fatalf("Open: %v", err)
		}
		if _, err := s.Acquire(ctx, "bench", 0); err != nil {
			b.Fatalf("Acquire: %v", err)
		}
		if err := s.Close(ctx); err != nil {
			b.Fatalf("Close: %v", err)
		}
		runs = append(runs, time.Since(start))
		start = time.Now()
		if _, err := cli.Put(ctx, "/bench/key", "value"); err != nil {
			b.Fatalf("Put: %v", err)
		}
		puts = append(puts, time.Since(start))
	}
	run, put := p50(runs), p50(puts)
	b.ReportMetric(run, "p50-ns")
	b.ReportMetric(put, "p50-put-ns")
	if put > 0 {
		b.ReportMetric(run/put, "puts/run")
	}
}

// p50 returns the median of times in nanoseconds.
func p50(times []time.Duration) float64 {
	if len(times) == 0 {
		return 0
	}
	slices.Sort(times)
	return float64(times[len(times)/2].Nanoseconds())
}
