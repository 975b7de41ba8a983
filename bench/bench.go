package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/hustings/hustings/backends/kubernetes/kubetest"
)

// config sizes a run.
type config struct {
	Quick         bool
	Samples       int            // latency samples per subject (acquire + release)
	Window        time.Duration  // how long each throughput or contention subject runs
	Handovers     int            // graceful handovers of ours (200: a p99 by nearest rank is the third largest, not the largest)
	PeerHandovers int            // graceful handovers per peer, whose p50 is compared (a client-go one takes seconds)
	Failovers     int            // crash failovers per backend
	EventSamples  int            // holder changes per backend (event latency)
	Scale         []int          // numbers of held campaigns
	ScaleMax      map[string]int // the most held campaigns per backend, where it is lower
	HoldWindow    time.Duration  // how long requests are counted while holding
	FailoverTTL   time.Duration  // session TTL in the failover workload
	FailoverTry   time.Duration  // retry interval in the failover workload
	ScaleTTL      time.Duration  // session TTL in the scale workload
	FenceWrites   int            // fenced writes per backend, and as many unfenced
	FenceWindow   time.Duration  // the most time a backend's fenced and unfenced writes take together
}

func fullConfig() config {
	return config{
		Samples: 2000, Window: 5 * time.Second, Handovers: 200, PeerHandovers: 50, Failovers: 15, EventSamples: 100,
		Scale: []int{1, 100, 1000, 10000, 100000}, HoldWindow: 10 * time.Second,
		// At 100,000 on one session, ZooKeeper's keep-alive (100 multis
		// of 1,000 checks) outlasts the 3 s TTL and every term is revoked
		// (bench/README.md, finding 6). PostgreSQL's, one UPDATE of the
		// session row and a read of its locks, holds 100,000.
		// Kubernetes: every lock is a Lease object in the apiserver's etcd,
		// and every acquire a GET, a create on first use and an update
		// through the apiserver; 1,000 already show the keep-alive's cost
		// beside client-go's.
		// The test servers of MongoDB (FerretDB over SQLite, one writer)
		// and DynamoDB (dynalite, one Node process), and Consul's dev
		// agent, elected 1,000 campaigns in 6.4 s, 1.6 s and 0.5 s in a
		// quick run at 36bdc37: 100,000 would outlast the point's limit
		// (30 s + 1 ms a campaign) on the first two, and measure the test
		// server rather than the library on all three.
		ScaleMax:    map[string]int{"zookeeper": 10000, "kubernetes": 1000, "mongodb": 10000, "dynamodb": 10000, "consul": 10000},
		FailoverTTL: time.Second, FailoverTry: 100 * time.Millisecond, ScaleTTL: 3 * time.Second,
		FenceWrites: 500, FenceWindow: 4 * time.Second,
	}
}

func quickConfig() config {
	c := fullConfig()
	c.Quick = true
	c.Samples, c.Window, c.Handovers, c.PeerHandovers, c.Failovers, c.EventSamples = 200, 700*time.Millisecond, 10, 10, 3, 20
	c.Scale, c.HoldWindow = []int{1, 100, 1000}, 2*time.Second
	c.FenceWrites, c.FenceWindow = 100, time.Second
	return c
}

// bench is one run: its systems under test and its report.
type bench struct {
	cfg     config
	out     io.Writer
	report  *Report
	systems []*system
	tmp     string
}

// workload is one kind of measurement, run on each system in turn.
type workload struct {
	id  string
	run func(b *bench, ctx context.Context, s *system) error
}

// workloads lists every workload in the order they run and are reported.
func workloads() []workload {
	return []workload{
		{"acquire-release", (*bench).acquireRelease},
		{"throughput", (*bench).throughput},
		{"contended", (*bench).contended},
		{"handover", (*bench).handover},
		{"failover", (*bench).failover},
		{"events", (*bench).eventLatency},
		{"scale", (*bench).scale},
		{"fenced-write", (*bench).fencedWrite},
		{"lock-lost", (*bench).lockLost},
	}
}

func workloadIDs() []string {
	var ids []string
	for _, w := range workloads() {
		ids = append(ids, w.id)
	}
	return ids
}

// logf prints a progress line with the time since the start.
func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(b.out, "%7.1fs  %s\n", time.Since(b.report.Started).Seconds(), fmt.Sprintf(format, args...))
}

// start starts a server for each of the named backends in a temporary
// directory.
func (b *bench) start(ctx context.Context, names []string) error {
	tmp, err := os.MkdirTemp("", "hustings-bench-")
	if err != nil {
		return err
	}
	b.tmp = tmp
	b.systems, err = startSystems(ctx, tmp, names, b.logf)
	if err != nil {
		_ = os.RemoveAll(tmp)
		return err
	}
	waited, busy, err := settle(ctx, procStat)
	if err != nil {
		b.logf("settle: %v (going on)", err)
		return nil
	}
	note := fmt.Sprintf("after the servers started, waited %v for the machine to settle (CPUs busy %.0f%% in the last %v; the bound is %.0f%%, the wait at most %v)",
		waited.Round(time.Second), 100*busy, settleWindow, 100*settleIdle, settleMost)
	b.report.Settings["settling"] = note
	b.logf("%s", note)
	return nil
}

// stop stops every server and removes the temporary directory.
func (b *bench) stop() {
	for _, s := range b.systems {
		b.logf("stopping %s", s.name)
		s.stop()
	}
	b.systems = nil
	if b.tmp != "" {
		_ = os.RemoveAll(b.tmp)
	}
}

// runAll runs the selected workloads (all if none) on every system. A
// failed workload is reported and the run goes on; an interrupt ends it.
func (b *bench) runAll(ctx context.Context, only []string) error {
	for _, w := range workloads() {
		if len(only) > 0 && !slices.Contains(only, w.id) {
			continue
		}
		for _, s := range b.systems {
			if err := ctx.Err(); err != nil {
				return err
			}
			b.logf("%s on %s", w.id, s.name)
			if err := w.run(b, ctx, s); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				msg := fmt.Sprintf("%s on %s: %v", w.id, s.name, err)
				b.logf("FAILED %s", msg)
				b.report.Errors = append(b.report.Errors, msg)
			}
		}
	}
	return nil
}

// newReport starts a report of this machine.
func newReport(cfg config, args []string) *Report {
	cmd := "cd bench && go run ."
	if len(args) > 0 {
		cmd += " " + strings.Join(args, " ")
	}
	return &Report{
		Started: time.Now(), Command: cmd, Quick: cfg.Quick,
		Machine: Machine{
			CPUs: runtime.NumCPU(), CPUModel: cpuModel(), OS: runtime.GOOS + "/" + runtime.GOARCH,
			GoVersion: runtime.Version(), Redis: redisVersion(),
		},
		Settings: settings(cfg),
	}
}

// settings states how every subject was configured, for the report.
func settings(cfg config) map[string]string {
	return map[string]string{
		"hustings RunIfLeader":     fmt.Sprintf("lease %v; on a free lock without WithWait; contended: WithWait(%v), retry %v (woken by the backend's watch first); on a session: the same with WithSession, each candidate keeping a campaign.Session of its own (TTL %v, keep-alive TTL/3, Run in a goroutine) for all its runs", hustingsLease, contendedWait, hustingsRetry, hustingsLease),
		"hustings campaigns":       fmt.Sprintf("handover: TTL 10 s, retry %v; failover: TTL %v, retry %v (+ jitter, a fifth); scale: TTL %v, keep-alive TTL/3, one shared session (NewSession + WithSession)", handoverRetry, cfg.FailoverTTL, cfg.FailoverTry, cfg.ScaleTTL),
		"redislock":                fmt.Sprintf("TTL %v; a waiting candidate calls Obtain with LinearBackoff(%v) in a loop", peerTTL, redislockRetry),
		"redislock handover":       fmt.Sprintf("the waiter retries every %v (LinearBackoff)", redislockRetry),
		"redsync":                  redsyncNote + "; a waiting candidate loops on Lock",
		"etcd concurrency":         fmt.Sprintf("Mutex and Election on a session (lease TTL %v) per candidate", peerTTL),
		"zk Lock":                  fmt.Sprintf("go-zookeeper Lock, a conn per candidate, session timeout %v", zkSessionTimeout),
		"ZooKeeper server":         "tickTime 200 ms (zktest), fsync on",
		"etcd server":              "embedded, one member, tick 50 ms, election 500 ms (etcdtest), fsync on",
		"Redis server":             "redis-server, no persistence (redistest)",
		"PostgreSQL server":        "PostgreSQL 15, its own cluster (pgtest), fsync on",
		"MariaDB server":           "MariaDB 10.11, its own data directory (mysqltest), innodb_flush_log_at_trx_commit=1, no binary log",
		"Kubernetes server":        "kube-apiserver " + kubetest.Version + " (kubetest) over an embedded etcd (etcdtest, fsync on); every client unthrottled (QPS -1; client-go's default is 5 a second), on connections of its own",
		"client-go leaderelection": fmt.Sprintf("LeaderElector on a resourcelock.LeaseLock, ReleaseOnCancel, a clientset per candidate; defaults: %v; tuned: %v for the lock workloads, %v for failover", clientGoDefaults, tunedTiming(peerTTL, hustingsRetry), tunedTiming(cfg.FailoverTTL, cfg.FailoverTry)),
		"scale: redislock peers":   fmt.Sprintf("N locks with TTL %v refreshed every TTL/3 by one loop, one Refresh each; up to %s", cfg.ScaleTTL, fmtNum(redislockScaleMax)),
		"scale: points":            scalePointsSetting(cfg),
		"fenced write":             fmt.Sprintf("a session through the backend holds one lock (Acquire, no lease); then up to %d writes through the native fence under its token and as many without, one at a time, in pairs whose order alternates, within %v; fence.Guard once, on the run's first backend's token", cfg.FenceWrites, cfg.FenceWindow),
	}
}

// scalePointsSetting states the scale workload's points and the
// backends' ceilings.
func scalePointsSetting(cfg config) string {
	var ns, caps []string
	for _, n := range cfg.Scale {
		ns = append(ns, fmtNum(float64(n)))
	}
	for _, backend := range slices.Sorted(maps.Keys(cfg.ScaleMax)) {
		caps = append(caps, fmt.Sprintf("%s up to %s", backend, fmtNum(float64(cfg.ScaleMax[backend]))))
	}
	s := strings.Join(ns, ", ") + " campaigns, each point's started at once, elected within " + electLimitText
	if len(caps) > 0 {
		s += " (" + strings.Join(caps, ", ") + ")"
	}
	return s
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func redisVersion() string {
	out, err := exec.Command("redis-server", "--version").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
