package redis_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hustings/hustings/backends/redis/redistest"
)

// BenchmarkAcquireRelease: Acquire and Release of a free lock on an open
// session (two round trips, each a script and an EXISTS in one pipeline).
func BenchmarkAcquireRelease(b *testing.B) {
	srv := redistest.Start(b)
	be := newBackend(b, srv.Addr())
	ctx := b.Context()
	s, err := be.Open(ctx, "bench", time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close(context.Background())
	var times []time.Duration
	for b.Loop() {
		start := time.Now()
		tok, err := s.Acquire(ctx, "bench", 0)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Release(ctx, "bench", tok, 0); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(start))
	}
	reportMedian(b, times)
}

// BenchmarkRoundTrip: one PING, the baseline for the one above.
func BenchmarkRoundTrip(b *testing.B) {
	srv := redistest.Start(b)
	client := redistest.Client(b, srv.Addr())
	ctx := b.Context()
	var times []time.Duration
	for b.Loop() {
		start := time.Now()
		if err := client.Ping(ctx).Err(); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(start))
	}
	reportMedian(b, times)
}

// reportMedian reports the median of the per-op times as p50-ns.
func reportMedian(b *testing.B, times []time.Duration) {
	if len(times) == 0 {
		return
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Nanoseconds()), "p50-ns")
}

// BenchmarkKeepAlive: KeepAlive of a session holding 0, 1,000 and 10,000
// locks on one server: one round trip each, the PEXPIRE and a script that
// reads every lock (while the server runs nothing else).
func BenchmarkKeepAlive(b *testing.B) {
	srv := redistest.Start(b)
	be := newBackend(b, srv.Addr())
	ctx := b.Context()
	for _, locks := range []int{0, 1000, 10000} {
		b.Run(fmt.Sprintf("locks=%d", locks), func(b *testing.B) {
			s, err := be.Open(ctx, "bench", time.Minute)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close(context.Background())
			for i := range locks {
				if _, err := s.Acquire(ctx, fmt.Sprintf("lock-%d", i), 0); err != nil {
					b.Fatal(err)
				}
			}
			var times []time.Duration
			for b.Loop() {
				start := time.Now()
				if err := s.KeepAlive(ctx); err != nil {
					b.Fatal(err)
				}
				times = append(times, time.Since(start))
			}
			reportMedian(b, times)
		})
	}
}
