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

// TestPlainTicks: a linear axis is labelled at round steps, written as
// the bars are.
func TestPlainTicks(t *testing.T) {
	for _, c := range []struct {
		hi   float64
		want string
	}{
		{28_000, "0 5,000 10,000 15,000 20,000 25,000"},
		{460, "0 100 200 300 400"},
		{1.15, "0.0 0.2 0.4 0.6 0.8 1.0"},
	} {
		var labels []string
		for _, tk := range (plainTicks{}).Ticks(0, c.hi) {
			if tk.Label != "" {
				labels = append(labels, tk.Label)
			}
		}
		if got := strings.Join(labels, " "); got != c.want {
			t.Errorf("labels of 0 to %v: %q, want %q", c.hi, got, c.want)
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
	tp := func(backend, subject string, g float64) Row {
		return Row{Workload: "throughput", Backend: backend, Subject: subject, Param: fmtNum(g) + " goroutines", Values: map[string]float64{"ops_per_s": 1000 * g}}
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
			tp("memory", subjectRunIf, 1), tp("memory", subjectRunIfSession, 1),
			tp("redis", subjectRunIf, 1), tp("redis", subjectRunIfSession, 1), tp("redis", "redislock", 1),
			tp("redis", subjectRunIf, 8), tp("redis", subjectRunIfSession, 8), tp("redis", "redislock", 8),
		}},
		"memory alone": {Rows: []Row{scale("memory", "hustings campaigns", 1, 0, 0, 1), scale("memory", "hustings campaigns", 10, 9000, 0, 10)}},
	}
	for name, rep := range reps {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := writeCharts(rep, dir); err != nil {
				t.Fatal(err)
			}
			files := []string{"scale.png"}
			if name == "all" {
				files = append(files, "throughput.png")
			}
			for _, f := range files {
				if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
					t.Errorf("%s: %v", f, err)
				}
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

// TestThroughputFigure: RunIfLeader on a session has a colour and legend
// entries of its own, and a backend without peers has no panel.
func TestThroughputFigure(t *testing.T) {
	var rows []Row
	for _, backend := range []string{"memory", "redis"} {
		for _, sub := range []string{subjectRunIf, subjectRunIfSession, "redislock"} {
			if backend == "memory" && sub == "redislock" {
				continue
			}
			for _, param := range []string{"1 goroutine", "8 goroutines"} {
				rows = append(rows, Row{Workload: "throughput", Backend: backend, Subject: sub, Param: param, Values: map[string]float64{"ops_per_s": 100}})
			}
		}
	}
	f := throughputFigure(&Report{Rows: rows})
	if len(f.panels) != 1 || f.keys != 6 {
		t.Errorf("%d panels, %d legend entries; want 1 (redis) and 6 (3 kinds × 2 concurrencies)", len(f.panels), f.keys)
	}
	for subject, want := range map[string]string{subjectRunIf: "Hustings", subjectRunIfSession: "Hustings on a session", "zk Lock": "peer library"} {
		var kinds []string
		for _, k := range throughputKinds {
			if k.is(subject) {
				kinds = append(kinds, k.name)
			}
		}
		if len(kinds) != 1 || kinds[0] != want {
			t.Errorf("%s is of kinds %q, want %q", subject, kinds, want)
		}
	}
}
