package chaos

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hustings/hustings/chaos/history"
	"github.com/hustings/hustings/internal/faultlink"
)

// TestMain runs this binary as a chaos node when nodeEnv is set, else the
// tests, checking that the harness leaks no goroutine.
func TestMain(m *testing.M) {
	if os.Getenv(nodeEnv) == "1" {
		os.Exit(runNode(os.Args[1:]))
	}
	goleak.VerifyTestMain(m, faultlink.KnownLeaks()...)
}

// profile is how long and how strictly a run goes, from the environment:
//
//	HUSTINGS_CHAOS=long        10 minutes of faults per backend, the
//	                           issue's bounds (make chaos); default short:
//	                           20 s per backend, bounds loose enough for a
//	                           loaded CI machine (make test)
//	HUSTINGS_CHAOS_DURATION=D  faults per backend, overriding the profile
//	HUSTINGS_CHAOS_SEED=N      the schedule's seed (default: the clock)
//	HUSTINGS_CHAOS_OUT=DIR     where to write each backend's history (JSON)
//	                           and the summary table
//	HUSTINGS_CHAOS_LOGS=DIR    keep the nodes' logs in a directory under DIR
//	                           (default: a temporary one, removed at the end)
type profile struct {
	name     string
	duration time.Duration
	ttl      time.Duration
	seed     int64
	out      string
	// lockNodes candidates campaign for the lock, groupNodes for the
	// group's slots.
	lockNodes, groupNodes int
}

func loadProfile(t *testing.T) profile {
	// The short profile runs 8 race-detected processes, not 13: on a busy
	// 2-core machine 13 starved the server and the harness for seconds.
	p := profile{name: "short", duration: 20 * time.Second, ttl: 2 * time.Second, seed: time.Now().UnixNano(), out: os.Getenv("HUSTINGS_CHAOS_OUT"),
		lockNodes: 3, groupNodes: 5}
	if os.Getenv("HUSTINGS_CHAOS") == "long" {
		p.name, p.duration, p.lockNodes, p.groupNodes = "long", 10*time.Minute, 5, 8
	}
	if s := os.Getenv("HUSTINGS_CHAOS_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("HUSTINGS_CHAOS_DURATION: %v", err)
		}
		p.duration = d
	}
	if s := os.Getenv("HUSTINGS_CHAOS_SEED"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("HUSTINGS_CHAOS_SEED: %v", err)
		}
		p.seed = n
	}
	return p
}

// bounds are the checker's limits for backend b: the design's in the long
// profile; in the short one, make test's, generous for liveness (see
// below). Safety (overlaps, tokens, the fence) is held to the same rules.
func (p profile) bounds(b backend) history.Config {
	retry := p.ttl / 8
	c := history.Config{
		Crash:    p.ttl + retry + retry/5 + b.slack,
		Graceful: 50 * time.Millisecond,
		Settle:   2 * p.ttl,
		// The nodes renew every TTL/3 (the default keep-alive), and each
		// renewal confirms the session's locks; then its round trip.
		Tamper: p.ttl/3 + 300*time.Millisecond,
	}
	// A kill heals at once, and beliefs agree with the backend when the
	// successor is elected, which Crash allows: more than 2 TTLs where the
	// server's expiry is that late (Consul's: up to 2×TTL, seen 4.09 s
	// after a kill at TTL 2 s, with failovers of p99 4.02 s).
	c.Settle = max(c.Settle, c.Crash)
	if b.handover > 0 {
		c.Graceful = b.handover
	}
	if b.pushed {
		// The session's watch pushes the delete: milliseconds, and room
		// for the node's scheduling.
		c.Tamper = 300 * time.Millisecond
	}
	if p.name == "short" {
		// make test's run is for safety: overlaps, tokens, the fence and
		// pairing are held to the same rules, but liveness gets room for
		// the race detector and a busy 2-core machine (seen beside two CPU
		// burners: handovers of 1.8–4.4 s, a server unanswered for seconds
		// after a node's 5-TTL pause). make chaos holds the bounds above.
		c.Crash += 2 * p.ttl
		c.Graceful = 5 * time.Second
		c.Settle += 10 * time.Second
		c.Tamper += 2 * time.Second
		// And liveness is counted in time the server and the harness
		// answered. Beside two CPU burners this machine's kernel (6.18,
		// sched_autogroup_enabled=1) starves a process that is alone in
		// its session: every PostgreSQL backend calls setsid(), and they
		// waited 75–105 ms on the run queue at each wake-up
		// (/proc/PID/schedstat), so that a SELECT 1 from a separate
		// process took up to 2.9 s; the same probe program run with
		// setsid stalled for up to 4 s, run without it not once. No
		// library elects a leader while its server does not answer.
		c.NetOfOutages = true
	}
	return c
}

// TestChaos runs the fault schedule against every real backend: candidate
// processes on one lock and on a group of 3 slots (5 and 8 long, 3 and 5
// short), each behind its own link, and checks the history of each run.
func TestChaos(t *testing.T) {
	p := loadProfile(t)
	t.Logf("profile %s: %v of faults per backend, TTL %v, seed %d (HUSTINGS_CHAOS_SEED=%d to replay the schedule)", p.name, p.duration, p.ttl, p.seed, p.seed)
	var rows []string
	for _, b := range backendsUnderTest {
		t.Run(b.name, func(t *testing.T) {
			r := runBackend(t, b, p)
			rows = append(rows, row(b.name, p, r))
		})
	}
	table := summary(p, rows)
	t.Log("\n" + table)
	if p.out != "" {
		if err := os.WriteFile(filepath.Join(p.out, "summary.md"), []byte(table), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// runBackend runs one backend's schedule and checks its history.
func runBackend(t *testing.T, b backend, p profile) history.Report {
	c := newCluster(t, b, p)
	start := time.Now()
	c.settle(start, 30*time.Second) // processes start slowly on a loaded machine
	if c.settles[0].Agreed.IsZero() {
		t.Fatalf("the first leaders were not elected: %s", c.settles[0].Detail)
	}
	c.settles = nil // the first elections are not a heal
	c.run(p.duration)
	c.finish()
	h := c.history()
	r := history.Check(h, c.bounds)
	if p.out != "" {
		save(t, filepath.Join(p.out, b.name+".json"), h)
	}
	for _, v := range r.Violations {
		t.Errorf("%s", v)
	}
	if len(c.faults) == 0 || len(r.Terms) < len(keys()) {
		t.Errorf("%d faults injected, %d terms: the run exercised nothing", len(c.faults), len(r.Terms))
	}
	if len(r.Violations) > 0 {
		t.Logf("node logs and the history are in %s", keep(t, c, h, p))
	}
	return r
}

// keep returns where a failed run's node logs and history are kept: the
// logs' own directory when the caller chose it (HUSTINGS_CHAOS_LOGS or
// HUSTINGS_CHAOS_OUT), else a copy of the temporary one in a new directory
// under the system's temporary directory, which the test's cleanup does
// not remove, so that a failure seen once (make test beside two CPU
// burners) can be read.
func keep(t *testing.T, c *cluster, h history.History, p profile) string {
	dir := c.dir
	if p.out == "" && os.Getenv("HUSTINGS_CHAOS_LOGS") == "" {
		// A directory of its own: a replay of the seed keeps its logs too.
		var err error
		dir, err = os.MkdirTemp("", fmt.Sprintf("hustings-chaos-%s-%d-", filepath.Base(t.Name()), p.seed))
		if err == nil {
			err = os.CopyFS(dir, os.DirFS(c.dir))
		}
		if err != nil {
			t.Logf("keep the node logs: %v", err)
			return c.dir
		}
	}
	save(t, filepath.Join(dir, "history.json"), h)
	return dir
}

// save writes h as JSON to path.
func save(t *testing.T, path string, h history.History) {
	data, err := json.MarshalIndent(h, "", " ")
	if err == nil {
		err = os.WriteFile(path, data, 0o644)
	}
	if err != nil {
		t.Errorf("save history: %v", err)
	}
}

// row is one backend's line of the summary table.
func row(name string, p profile, r history.Report) string {
	return fmt.Sprintf("| %s | %v | %s | %d | %d | %d | %d | %d | %s | %s | %v | %d | %d |",
		name, p.duration, joinKinds(r.Faults), len(r.Terms), len(r.Violations), r.Excused, r.Tampered, r.StaleRejected,
		percentiles(r.Crash), percentiles(r.Graceful), r.Outage.Round(time.Millisecond), r.Net, r.Leaked)
}

func summary(p profile, rows []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "chaos profile %s, seed %d, TTL %v\n\n", p.name, p.seed, p.ttl)
	b.WriteString("| backend | faults for | faults injected | terms | violations | overlaps excused by a pause | overlaps after a tamper, within its bound | stale writes refused | crash failover p50 / p99 | handover p50 / p99 | server or harness stalled | within a bound only net of that | goroutines leaked |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		b.WriteString(r + "\n")
	}
	return b.String()
}

// percentiles formats the p50 and p99 of ds (nearest rank), and n.
func percentiles(ds []time.Duration) string {
	if len(ds) == 0 {
		return "–"
	}
	s := slices.Sorted(slices.Values(ds))
	rank := func(q float64) time.Duration {
		i := int(q*float64(len(s))+0.999999) - 1
		return s[max(0, min(i, len(s)-1))]
	}
	return fmt.Sprintf("%v / %v (n=%d)", round(rank(0.5)), round(rank(0.99)), len(s))
}

func round(d time.Duration) time.Duration {
	if d < 10*time.Millisecond {
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Millisecond)
}
