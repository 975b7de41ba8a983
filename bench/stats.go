package main

import (
	"math"
	"slices"
	"time"
)

// Dist summarises a set of latencies: the count, the median, the 99th
// percentile and the largest, by the nearest-rank method.
type Dist struct {
	N   int           `json:"n"`
	P50 time.Duration `json:"p50_ns"`
	P99 time.Duration `json:"p99_ns"`
	Max time.Duration `json:"max_ns"`
}

// Summarize returns the Dist of samples; the zero Dist when there are
// none. It does not modify samples.
func Summarize(samples []time.Duration) Dist {
	if len(samples) == 0 {
		return Dist{}
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	return Dist{N: len(s), P50: Percentile(s, 50), P99: Percentile(s, 99), Max: s[len(s)-1]}
}

// Percentile returns the p-th percentile (0 < p ≤ 100) of sorted by the
// nearest-rank method: the smallest sample that at least p% of the samples
// are less than or equal to. It returns 0 for no samples.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// timed runs fn n times and returns the time each call took; it stops at
// the first error.
func timed(n int, fn func(i int) error) ([]time.Duration, error) {
	out := make([]time.Duration, 0, n)
	for i := range n {
		start := time.Now()
		if err := fn(i); err != nil {
			return out, err
		}
		out = append(out, time.Since(start))
	}
	return out, nil
}

// ratio returns a / b, or 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
