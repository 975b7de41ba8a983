package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
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
		{Workload: "scale", Backend: "etcd", Subject: "hustings campaigns", Param: "100", Values: map[string]float64{"locks": 100, "bytes_per_campaign": 4000, "goroutines": 101, "requests_per_s": 1.2}},
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

// TestRunIfLeaderTargets: both RunIfLeader subjects are rated against the
// best peer, and judged by their own goals: on a session ≥ the best peer
// (and, contended, a shorter longest wait), without one ≥ 0.8× it.
func TestRunIfLeaderTargets(t *testing.T) {
	tp := func(subject string, ops float64) Row {
		return Row{Workload: "throughput", Backend: "redis", Subject: subject, Param: "1 goroutine", Values: map[string]float64{"ops_per_s": ops}}
	}
	ct := func(subject string, cs float64, longest time.Duration) Row {
		return Row{Workload: "contended", Backend: "redis", Subject: subject, Param: "8 candidates",
			Latency: &Dist{N: 1, P50: longest, P99: longest, Max: longest}, Values: map[string]float64{"cs_per_s": cs}}
	}
	b := &bench{report: &Report{Rows: []Row{
		tp(subjectRunIf, 850), tp(subjectRunIfSession, 950), tp("redislock", 1000), tp("redsync", 600),
		ct(subjectRunIf, 500, time.Millisecond), ct(subjectRunIfSession, 1200, 10*time.Millisecond),
		ct("redislock", 1000, 200*time.Millisecond), ct("redsync", 1100, 5*time.Millisecond),
	}}}
	s := &system{name: "redis", peers: []peer{{name: "redislock"}, {name: "redsync"}}}
	b.rateAgainstBestPeer("throughput", s, "1 goroutine", "ops_per_s")
	b.rateAgainstBestPeer("contended", s, "", "cs_per_s")
	for _, sub := range []string{subjectRunIf, subjectRunIfSession} {
		if r := b.report.Find("throughput", "redis", sub, ""); r.Baseline != "redislock" || r.Ratio == 0 {
			t.Errorf("throughput %s: baseline %q, ratio %v; want redislock's", sub, r.Baseline, r.Ratio)
		}
		if r := b.report.Find("contended", "redis", sub, ""); r.Baseline != "redsync" || r.Ratio == 0 {
			t.Errorf("contended %s: baseline %q, ratio %v; want redsync's", sub, r.Baseline, r.Ratio)
		}
	}
	met := map[string]bool{}
	for _, tg := range evaluate(b.report) {
		met[tg.Goal] = tg.Met
	}
	want := map[string]bool{
		goalRunIf + " (1 goroutine)":        true,  // 0.85× ≥ 0.8×
		goalRunIfSession + " (1 goroutine)": false, // 0.95× < 1×
		goalContended:                       false, // 1.09× redsync's, but waited 10 ms against its 5
	}
	if len(met) != len(want) {
		t.Errorf("targets %v, want %v", met, want)
	}
	for goal, w := range want {
		if got, ok := met[goal]; !ok || got != w {
			t.Errorf("%s: met = %v (present %v), want %v", goal, got, ok, w)
		}
	}
	if got := b.report.throughputCell("redis"); got != "850; on a session 950 (redislock 1,000)" {
		t.Errorf("throughputCell = %q", got)
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
	cfg.Samples, cfg.Window, cfg.Handovers, cfg.PeerHandovers, cfg.Failovers, cfg.EventSamples = 20, 100*time.Millisecond, 3, 3, 1, 5
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
	for _, w := range []string{"throughput", "contended"} {
		if b.report.Find(w, "memory", subjectRunIfSession, "") == nil {
			t.Errorf("no %s row for %s", w, subjectRunIfSession)
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

// TestFencedWriteTable: each backend's fenced row is rated against its
// unfenced twin, the fence.Guard rows come last, and they are no
// backend's in the summary.
func TestFencedWriteTable(t *testing.T) {
	row := func(backend, form, subject string, p50 time.Duration, x float64) Row {
		return Row{Workload: "fenced-write", Backend: backend, Param: form, Subject: subject,
			Latency: &Dist{N: 500, P50: p50, P99: 2 * p50, Max: 3 * p50}, Values: map[string]float64{"ops_per_s": 1e9 / float64(p50)}, Ratio: x}
	}
	rep := &Report{Rows: []Row{
		row("memory", "fenced", "Fence(write)", 140, 3.5),
		row("memory", "unfenced", "write", 40, 0),
		row(guardBackend, "fenced", "Guard.Handler", 58*time.Microsecond, 1.05),
		row(guardBackend, "unfenced", "handler", 55*time.Microsecond, 0),
		row("etcd", "fenced", "Txn If(Fence) Then Put", 800*time.Microsecond, 1.02),
		row("etcd", "unfenced", "Txn Then Put", 784*time.Microsecond, 0),
	}}
	want := []string{
		"| memory | fenced | Fence(write) | 500 | 140 ns | 280 ns | 420 ns | 7,142,857 | 3.50× |  |",
		"| memory | unfenced | write | 500 | 40 ns | 80 ns | 120 ns | 25,000,000 | – |  |",
		"| etcd | fenced | Txn If(Fence) Then Put | 500 | 800 µs | 1.60 ms | 2.40 ms | 1,250 | 1.02× |  |",
		"| etcd | unfenced | Txn Then Put | 500 | 784 µs | 1.57 ms | 2.35 ms | 1,276 | – |  |",
		"| http | fenced | Guard.Handler | 500 | 58.0 µs | 116 µs | 174 µs | 17,241 | 1.05× |  |",
		"| http | unfenced | handler | 500 | 55.0 µs | 110 µs | 165 µs | 18,182 | – |  |",
	}
	lines := strings.Split(strings.TrimSpace(renderFencedWrite(rep.Select("fenced-write"))), "\n")[2:]
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("table rows:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if got := backendsIn(rep); !slices.Equal(got, []string{"memory", "etcd"}) {
		t.Errorf("backendsIn = %v, want memory and etcd alone", got)
	}
}
