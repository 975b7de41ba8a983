package main

import (
	"fmt"
	"slices"
	"strings"
)

// Markdown renders the report: the targets first, then a table per
// workload, then the settings every subject ran with.
func (rep *Report) Markdown() string {
	var b strings.Builder
	kind := "full run"
	if rep.Partial {
		kind = "partial run (some backends, workloads or scale points)"
	}
	if rep.Quick {
		kind = "quick run (-quick: fewer samples, shorter windows; not for quoting)"
	}
	fmt.Fprintf(&b, "# Hustings benchmarks\n\n%s, started %s, took %v: `%s`", kind, rep.Started.Format("2006-01-02 15:04 MST"), rep.Elapsed, rep.Command)
	if rep.Revision != "" {
		fmt.Fprintf(&b, " (library at %s)", rep.Revision)
	}
	b.WriteString("\n\n")
	m := rep.Machine
	fmt.Fprintf(&b, "Machine: %d CPUs (%s), %s, %s; %s. Every server on loopback, started by the bench.\n\n", m.CPUs, m.CPUModel, m.OS, m.GoVersion, m.Redis)
	if len(rep.Rows) > 0 {
		b.WriteString("## Summary\n\nOne line per backend; the tables below have every subject and ratio.\n\n" + rep.Summary() + "\n")
	}
	for _, sec := range sections {
		rows := rep.Select(sec.workload)
		if sec.workload != "targets" && len(rows) == 0 {
			continue
		}
		fmt.Fprintf(&b, "## %s\n\n%s\n\n", sec.title, sec.about)
		if sec.workload == "targets" {
			b.WriteString(rep.targetsTable())
		} else {
			b.WriteString(sec.render(rows))
		}
		b.WriteString("\n")
	}
	b.WriteString("## Settings\n\n")
	keys := make([]string, 0, len(rep.Settings))
	for k := range rep.Settings {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "- **%s**: %s\n", k, rep.Settings[k])
	}
	if len(rep.Errors) > 0 {
		b.WriteString("\n## Errors\n\n")
		for _, e := range rep.Errors {
			fmt.Fprintf(&b, "- %s\n", e)
		}
	}
	return b.String()
}

func (rep *Report) targetsTable() string {
	var rows [][]string
	for _, t := range rep.Targets {
		met := "**no**"
		if t.Met {
			met = "yes"
		}
		rows = append(rows, []string{t.Goal, t.Backend, t.Measured, met, t.Note})
	}
	return table([]string{"target", "backend", "measured", "met", "what limits it"}, rows)
}

// section is one workload's part of latest.md.
type section struct {
	workload, title, about string
	render                 func([]Row) string
}

var sections = []section{
	{"targets", "Targets", "The performance goals set for the library, each judged from this run's rows: reported, not asserted.", nil},
	{"acquire-release", "Acquire + release of a free lock",
		"Median (p50), 99th percentile and largest of one acquire and one release, on one open session or client; the plain read and write of the same server, timed in turns with them, are the baselines (× read, × write: p50 over the baseline's p50). `hustings RunIfLeader` also opens and closes a session (its lease) per run.",
		renderLatencyRatios},
	{"throughput", "RunIfLeader throughput",
		"Completed lock + run + unlock per second, from 1 and from 8 goroutines on distinct names through one client; × best peer compares with the fastest peer on the same backend at the same concurrency. RunIfLeader also returns a fencing token; of the peers only etcd's key revision could serve as one. `hustings RunIfLeader` opens and closes a session per run; `hustings RunIfLeader on a session` runs on one the candidate keeps (`WithSession`): an acquire and a release.",
		renderThroughput},
	{"contended", "Contended: 8 candidates on one name",
		"Eight candidates, each with a client (and session) of its own, take turns on one lock: completed critical sections per second, and how long a candidate waited from asking to holding. `hustings RunIfLeader on a session`: each candidate's turns on a session it keeps.",
		renderContended},
	{"handover", "Graceful handover",
		"Hustings: from the holder's `Resign` to the next candidate's `Elected` event on its channel, two campaigns each on a client of its own. Peers: from the end of the holder's critical section (then unlock) to the start of the waiter's (its lock returned): etcd Election is Resign → Campaign returns; redislock's waiter loops on Obtain, so its retry interval bounds the handover; client-go's LeaderElector (its `ReleaseOnCancel` release, then the waiter's next try) tries every retry period stretched by up to 2.2×, and the holder lets go at a random moment within that gap.",
		renderLatencyBaseline},
	{"failover", "Crash failover",
		"The holder's backend calls start to hang (hustingstest.Crashable: no keep-alive, no release) while its process lives; a waiting candidate on a client of its own. From the crash to the waiter's `Elected` event. Overlaps counts waiters elected before the crashed holder had revoked its own term (the safety contract: always 0). " +
			"On Kubernetes also client-go's `leaderelection` on a `LeaseLock`, its holder's requests hanging from the crash: from the crash to the waiter's `OnStartedLeading`, with client-go's defaults (samples side by side, each on a Lease of its own) and tuned to the same TTL and retry (lease = TTL, renew deadline ⅔ of it); overlaps counts waiters that started leading before the holder's `OnStoppedLeading`; p99 / TTL is to its lease duration.",
		renderFailover},
	{"events", "Event latency",
		"From the start of the write that changes the holder (a plain session's Acquire or Release, on another client) to the `campaign.Observe` consumer receiving the event.",
		renderLatencyBaseline},
	{"scale", "Scale: campaigns held by one process",
		"N campaigns on one shared session (`NewSession` + `WithSession`), started all at once: how many were elected, and when the last one was, within a limit of " + electLimitText + " (a point that misses it is reported as it is, with the count, not retried or started in batches). " +
			"Then, while they hold: the live heap + goroutine stacks and the goroutines they add, per campaign, each measured after GC against a baseline taken right before the point started, once the process had settled; and the server's requests per second over the hold (Redis INFO commandstats, etcd gRPC requests counted by a client interceptor, ZooKeeper mntr packets received, which include the conn's pings; PostgreSQL the statements the bench's pool sends, counted by a pgx tracer). " +
			"At a point not all elected, the memory and requests are those of the campaigns still trying, not of held ones. redislock: N locks refreshed by one loop every TTL/3, up to 10,000 (the note gives the loop's longest round; at 100,000 a round would outlast the interval). " +
			"On Kubernetes the requests are the writes the bench's clients send (reads are not counted: the session's keep-alive lists its locks only at its first tick, or when the watch broke or lags), and client-go LeaseLock holds N Leases with a LeaderElector each (its defaults) on one clientset, up to 1,000: each renews with one write per retry period.\n\n" +
			"The rows of 1 and 100 campaigns are within the process's noise: goroutine stacks are counted in whole 32 KiB spans (one campaign's stack column is 0 or 32,768), and the rest of the process's heap moves by a few KB between two measurements (on etcd also the embedded server's, which runs in this process). Only that noise can make a figure negative. Read the rows of 1,000 and more. With the memory and etcd backends the store is in this process too, and counted.",
		renderScale},
	{"fenced-write", "Fenced write",
		"One write through the backend's native fence, under the token of a lock a session holds, against the same write to the same place without the fence: writes one at a time, fenced and unfenced in turns (which goes first alternates), so noise hits both alike; writes/s is one writer's pace, × unfenced the fenced p50 over the unfenced p50. " +
			"Each write says what it sends: the fence's reads are part of its cost where the backend cannot check the lock inside the write (ZooKeeper, Kubernetes, MongoDB, DynamoDB). " +
			"The `http` rows are no backend's: `fence.Guard` in front of an HTTP handler (`Guard.Handler`, the client setting `fence.SetHeaders`) against the handler alone, once per run.",
		renderFencedWrite},
	{"lock-lost", "A lock taken over behind its leader",
		"On Redis and memory: a campaign holds a lock (TTL 900 ms) across a renewal; the bench deletes the lock (on Redis a DEL of its key, as an eviction would) and a candidate on another client takes it. From the start of the DEL to the holder's `Revoked` (reason `lock-lost`): how long two candidates both believed they led. Found by renewal alone, it takes up to a keep-alive interval (300 ms).",
		renderLatencyBaseline},
}

func latencyCells(d *Dist) []string {
	if d == nil {
		return []string{"–", "–", "–", "–"}
	}
	return []string{fmtNum(float64(d.N)), fmtDur(d.P50), fmtDur(d.P99), fmtDur(d.Max)}
}

func renderLatencyRatios(rows []Row) string {
	var out [][]string
	for _, r := range rows {
		cells := append([]string{r.Backend, r.Subject}, latencyCells(r.Latency)...)
		out = append(out, append(cells, fmtRatio(r.Values["x_read"]), fmtRatio(r.Values["x_write"])))
	}
	return table([]string{"backend", "subject", "n", "p50", "p99", "max", "× read", "× write"}, out)
}

func renderLatencyBaseline(rows []Row) string {
	var out [][]string
	for _, r := range rows {
		cells := append([]string{r.Backend, r.Subject}, latencyCells(r.Latency)...)
		out = append(out, append(cells, fmtRatio(r.Ratio), r.Note))
	}
	return table([]string{"backend", "subject", "n", "p50", "p99", "max", "p50 × Hustings", "note"}, out)
}

func renderThroughput(rows []Row) string {
	var out [][]string
	for _, r := range rows {
		out = append(out, []string{r.Backend, r.Subject, r.Param, fmtNum(r.Values["ops_per_s"]), fmtRatio(r.Ratio)})
	}
	return table([]string{"backend", "subject", "concurrency", "runs/s", "× best peer"}, out)
}

func renderContended(rows []Row) string {
	var out [][]string
	for _, r := range rows {
		d := r.Latency
		out = append(out, []string{r.Backend, r.Subject, fmtNum(r.Values["cs_per_s"]), fmtDur(d.P50), fmtDur(d.P99), fmtDur(d.Max), fmtRatio(r.Ratio)})
	}
	return table([]string{"backend", "subject", "sections/s", "wait p50", "wait p99", "longest wait", "× best peer"}, out)
}

func renderFailover(rows []Row) string {
	var out [][]string
	for _, r := range rows {
		cells := append([]string{r.Backend, r.Subject, r.Param}, latencyCells(r.Latency)...)
		out = append(out, append(cells, fmtRatio(r.Ratio), fmtNum(r.Values["overlaps"])))
	}
	return table([]string{"backend", "subject", "settings", "n", "p50", "p99", "max", "p99 / TTL", "overlaps"}, out)
}

func renderScale(rows []Row) string {
	var out [][]string
	for _, r := range rows {
		v := r.Values
		reqs := "–"
		if r.Backend != "memory" {
			reqs = fmtRate(v["requests_per_s"])
		}
		out = append(out, []string{r.Backend, r.Subject, fmtNum(v["locks"]), electedCell(r), fmtNum(v["bytes_per_campaign"]),
			fmtNum(v["heap_per_campaign"]), fmtNum(v["stack_per_campaign"]), fmt.Sprintf("%.2f", v["goroutines_per_campaign"]), reqs, r.Note})
	}
	return table([]string{"backend", "subject", "campaigns", "elected (started at once)", "bytes each", "of which heap", "of which stacks", "goroutines each", "requests/s while holding", "note"}, out)
}

// renderFencedWrite puts the fence.Guard rows, which ran on no backend,
// last.
func renderFencedWrite(rows []Row) string {
	var out, guard [][]string
	for _, r := range rows {
		cells := append([]string{r.Backend, r.Param, r.Subject}, latencyCells(r.Latency)...)
		cells = append(cells, fmtNum(r.Values["ops_per_s"]), fmtRatio(r.Ratio), r.Note)
		if r.Backend == guardBackend {
			guard = append(guard, cells)
		} else {
			out = append(out, cells)
		}
	}
	return table([]string{"backend", "form", "write", "n", "p50", "p99", "max", "writes/s", "p50 × unfenced", "note"}, append(out, guard...))
}

// fmtRate formats a rate per second: one decimal while it is small (1.0,
// 1.8), thousands separators when it is not (30,202).
func fmtRate(v float64) string {
	if v >= 100 {
		return fmtNum(v)
	}
	return fmt.Sprintf("%.1f", v)
}

// electedCell says how many of a scale row's campaigns were elected and
// how fast, and how many still led after the hold when not all did: "all
// in 437 ms", "**31,133 of 100,000** in 2m10s (the limit)".
func electedCell(r Row) string {
	v := r.Values
	elected, ok := v["elected"]
	if !ok {
		return "–"
	}
	took := fmtDur(timeDur(v["elect_ns"]))
	s := "all in " + took
	if elected < v["locks"] {
		s = fmt.Sprintf("**%s of %s** in %s (the limit)", fmtNum(elected), fmtNum(v["locks"]), fmtDur(timeDur(v["elect_limit_ns"])))
	}
	if lead := v["leading_after_hold"]; lead < v["locks"] {
		s += fmt.Sprintf("; **%s leading after the hold**", fmtNum(lead))
	}
	return s
}
