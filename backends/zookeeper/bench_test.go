package zookeeper_test

import (
	"slices"
	"testing"
	"time"
)

// BenchmarkAcquireRelease: Acquire and Release of a free lock on an open
// session: two writes (the node's creation, its deletion), each waiting
// for the server's fsync.
func BenchmarkAcquireRelease(b *testing.B) {
	const timeout = 4 * time.Second
	be := newBackend(b, dial(b, server(b).Addr(), timeout), timeout)
	s, err := be.Open(b.Context(), "bench", timeout)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close(b.Context())
	tok, err := s.Acquire(b.Context(), "bench", 0) // creates the lock's parent
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Release(b.Context(), "bench", tok, 0); err != nil {
		b.Fatal(err)
	}
	lat := make([]time.Duration, 0, b.N)
	renewed := time.Now()
	b.ResetTimer()
	for range b.N {
		if time.Since(renewed) > timeout/3 {
			b.StopTimer()
			if err := s.KeepAlive(b.Context()); err != nil {
				b.Fatal(err)
			}
			renewed = time.Now()
			b.StartTimer()
		}
		start := time.Now()
		tok, err := s.Acquire(b.Context(), "bench", 0)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Release(b.Context(), "bench", tok, 0); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.ReportMetric(p50(lat), "p50-ns")
}

// BenchmarkRoundTrip: one plain round trip, Exists of one node.
func BenchmarkRoundTrip(b *testing.B) {
	conn := dial(b, server(b).Addr(), 4*time.Second)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if _, _, err := conn.Exists("/zookeeper"); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.ReportMetric(p50(lat), "p50-ns")
}

// p50 returns the median of lat in nanoseconds.
func p50(lat []time.Duration) float64 {
	if len(lat) == 0 {
		return 0
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	return float64(s[len(s)/2].Nanoseconds())
}
