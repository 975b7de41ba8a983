package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	tests := []struct {
		name    string
		samples []time.Duration
		p       float64
		want    time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one", ms(7), 99, 7 * time.Millisecond},
		{"median of four is the second", ms(1, 2, 3, 4), 50, 2 * time.Millisecond},
		{"median of five", ms(1, 2, 3, 4, 5), 50, 3 * time.Millisecond},
		{"p99 of 1..100", ms(hundred...), 99, 99 * time.Millisecond},
		{"p100 is the max", ms(hundred...), 100, 100 * time.Millisecond},
		{"tiny p is the min", ms(3, 1, 2)[1:], 0.1, 1 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Percentile(tt.samples, tt.p); got != tt.want {
				t.Errorf("Percentile(%v, %v) = %v, want %v", tt.samples, tt.p, got, tt.want)
			}
		})
	}
}

func TestSummarizeDoesNotSortItsInput(t *testing.T) {
	in := []time.Duration{3, 1, 2}
	d := Summarize(in)
	if d != (Dist{N: 3, P50: 2, P99: 3, Max: 3}) {
		t.Errorf("Summarize = %+v", d)
	}
	if in[0] != 3 {
		t.Errorf("input reordered: %v", in)
	}
}

func TestFormat(t *testing.T) {
	tests := []struct{ got, want string }{
		{fmtDur(1500 * time.Nanosecond), "1.50 µs"},
		{fmtDur(141 * time.Microsecond), "141 µs"},
		{fmtDur(1200 * time.Microsecond), "1.20 ms"},
		{fmtDur(1100 * time.Millisecond), "1.10 s"},
		{fmtNum(1234567), "1,234,567"},
		{fmtNum(999), "999"},
		{fmtNum(-13024), "-13,024"},
		{fmtNum(-98304), "-98,304"},
		{fmtNum(0.5), "0.50"},
		{fmtRatio(1.234), "1.23×"},
		{fmtRatio(0), "–"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

// TestTargets: the goals are judged from the rows as they were set.
func TestTargets(t *testing.T) {
	lat := func(p50, p99 time.Duration) *Dist { return &Dist{N: 1, P50: p50, P99: p99, Max: p99} }
	rep := &Report{Rows: []Row{
		{Workload: "acquire-release", Backend: "etcd", Subject: "hustings Acquire + Release", Latency: lat(1200*time.Microsecond, 0), Values: map[string]float64{"x_write": 2.0}},
		{Workload: "acquire-release", Backend: "etcd", Subject: "Put", Latency: lat(500*time.Microsecond, 0), Values: map[string]float64{"x_write": 1}},
		{Workload: "handover", Backend: "etcd", Subject: "hustings Resign → Elected", Latency: lat(time.Millisecond, 12*time.Millisecond)},
		{Workload: "failover", Backend: "etcd", Subject: "hustings crash → Elected", Latency: lat(time.Second, 1200*time.Millisecond), Values: map[string]float64{"ttl_ns": float64(time.Second)}},
		{Workload: "scale", Backend: "etcd", Subject: "hustings campaigns", Param: "1", Values: map[string]float64{"locks": 1, "bytes_per_campaign": 9000, "goroutines": 2, "requests_per_s": 1}},
		{Workload: "scale", Backend: "etcd", Subject: "hustings campaigns", Param: "100", Values: map[string]float64{"locks": 100, "bytes_per_campaign": 5000, "goroutines": 101, "requests_per_s": 1.2}},
	}}
	met := map[string]bool{}
	for _, tg := range evaluate(rep) {
		met[tg.Goal] = tg.Met
	}
	want := map[string]bool{goalAcquire: true, goalHandover: false, goalFailover: true, goalBytes: true, goalGoroutine: true, goalTraffic: true}
	for goal, w := range want {
		if got, ok := met[goal]; !ok || got != w {
			t.Errorf("%s: met = %v (present %v), want %v", goal, got, ok, w)
		}
	}
}

// TestElectedCell: a scale point says how many campaigns were elected and
// how fast, and flags a miss and a loss.
func TestElectedCell(t *testing.T) {
	row := func(locks, elected, leading float64) Row {
		return Row{Values: map[string]float64{"locks": locks, "elected": elected, "leading_after_hold": leading,
			"elect_ns": float64(437 * time.Millisecond), "elect_limit_ns": float64(130 * time.Second)}}
	}
	tests := []struct {
		name string
		r    Row
		want string
	}{
		{"all held", row(1000, 1000, 1000), "all in 437 ms"},
		{"missed the limit", row(100000, 31133, 0), "**31,133 of 100,000** in 130 s (the limit); **0 leading after the hold**"},
		{"lost after", row(1000, 1000, 998), "all in 437 ms; **998 leading after the hold**"},
		{"a row from before the counts", Row{Values: map[string]float64{"locks": 10}}, "–"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := electedCell(tt.r); got != tt.want {
				t.Errorf("electedCell = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestQuickOnMemory runs every workload briefly on the memory backend and
// checks that the files come out with a row per workload.
func TestQuickOnMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every workload for a few seconds")
	}
	cfg := quickConfig()
	cfg.Samples, cfg.Window, cfg.Handovers, cfg.Failovers, cfg.EventSamples = 20, 100*time.Millisecond, 3, 1, 5
	cfg.Scale, cfg.HoldWindow = []int{1, 50}, 100*time.Millisecond
	var log strings.Builder
	b := &bench{cfg: cfg, out: &log, report: newReport(cfg, nil)}
	ctx := context.Background()
	if err := b.start(ctx, []string{"memory"}); err != nil {
		t.Fatal(err)
	}
	defer b.stop()
	if err := b.runAll(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if len(b.report.Errors) > 0 {
		t.Fatalf("errors: %v\n%s", b.report.Errors, log.String())
	}
	for _, id := range workloadIDs() {
		if len(b.report.Select(id)) == 0 {
			t.Errorf("no row for workload %s", id)
		}
	}
	b.report.Targets = evaluate(b.report)
	dir := t.TempDir()
	if err := b.report.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	if err := writeCharts(b.report, dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"latest.md", "latest.json", "handover_failover.png", "scale.png"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	md, _ := os.ReadFile(filepath.Join(dir, "latest.md"))
	if !strings.Contains(string(md), "## Targets") || !strings.Contains(string(md), "graceful handover p99 < 10 ms") {
		t.Errorf("latest.md has no targets table:\n%s", md)
	}
}
