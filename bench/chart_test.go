package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCountTicks: a log axis of counts is labelled as counts are written,
// at each power of ten in range, never in exponent form.
func TestCountTicks(t *testing.T) {
	tests := []struct {
		lo, hi float64
		want   []string
	}{
		{0.6, 170000, []string{"1", "10", "100", "1,000", "10,000", "100,000"}},
		{0.1, 85, []string{"0.1", "1", "10"}},
		{100, 100000, []string{"100", "1,000", "10,000", "100,000"}},
	}
	for _, tt := range tests {
		var got []string
		for _, tick := range (countTicks{}).Ticks(tt.lo, tt.hi) {
			if tick.Value < tt.lo || tick.Value > tt.hi {
				t.Errorf("Ticks(%v, %v): tick %v out of range", tt.lo, tt.hi, tick.Value)
			}
			if tick.Label != "" {
				got = append(got, tick.Label)
			}
		}
		if strings.Join(got, " ") != strings.Join(tt.want, " ") {
			t.Errorf("Ticks(%v, %v) labels = %q, want %q", tt.lo, tt.hi, got, tt.want)
		}
	}
}

// TestChartsDrawEveryRow: charts come out for rows a log axis cannot show
// (a negative memory figure), points not all held, and one backend alone.
func TestChartsDrawEveryRow(t *testing.T) {
	scale := func(backend, subject string, locks, bytes, reqs, elected float64) Row {
		return Row{Workload: "scale", Backend: backend, Subject: subject, Param: fmtNum(locks), Values: map[string]float64{
			"locks": locks, "bytes_per_campaign": bytes, "requests_per_s": reqs, "elected": elected, "leading_after_hold": elected}}
	}
	lat := &Dist{N: 1, P50: time.Millisecond, P99: 2 * time.Millisecond, Max: 2 * time.Millisecond}
	reps := map[string]*Report{
		"all": {Rows: []Row{
			{Workload: "handover", Backend: "memory", Subject: "hustings Resign → Elected", Latency: lat},
			{Workload: "handover", Backend: "redis", Subject: "hustings Resign → Elected", Latency: lat},
			{Workload: "handover", Backend: "redis", Subject: "redislock unlock → lock", Latency: lat},
			{Workload: "failover", Backend: "redis", Subject: "hustings crash → Elected", Latency: lat, Values: map[string]float64{"ttl_ns": 1e9}},
			{Workload: "acquire-release", Backend: "redis", Subject: "hustings Acquire + Release", Latency: lat, Values: map[string]float64{"x_read": 3}},
			{Workload: "acquire-release", Backend: "redis", Subject: "PING", Latency: lat, Values: map[string]float64{"x_read": 1}},
			scale("redis", "hustings campaigns", 1, -3736, 1, 1),
			scale("redis", "hustings campaigns", 1000, 14000, 1, 1000),
			scale("redis", "hustings campaigns", 100000, 26000, 70000, 31133),
			scale("redis", "redislock", 1000, 108, 3000, 1000),
		}},
		"memory alone": {Rows: []Row{scale("memory", "hustings campaigns", 1, 0, 0, 1), scale("memory", "hustings campaigns", 10, 9000, 0, 10)}},
	}
	for name, rep := range reps {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := writeCharts(rep, dir); err != nil {
				t.Fatal(err)
			}
			if st, err := os.Stat(filepath.Join(dir, "scale.png")); err != nil || st.Size() == 0 {
				t.Errorf("scale.png: %v", err)
			}
		})
	}
}

func TestHandoverLabel(t *testing.T) {
	for subject, want := range map[string]string{
		"hustings Resign → Elected":                  "Hustings",
		"redislock unlock → lock":                    "redislock, 10 ms retry",
		"etcd Mutex, session per lock unlock → lock": "etcd Mutex, session per lock",
	} {
		if got := handoverLabel(subject); got != want {
			t.Errorf("handoverLabel(%q) = %q, want %q", subject, got, want)
		}
	}
}
