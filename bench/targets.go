package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Target is one performance goal set for the library, with what this
// run measured.
type Target struct {
	Goal     string `json:"goal"`
	Backend  string `json:"backend"`
	Measured string `json:"measured"`
	Met      bool   `json:"met"`
	Note     string `json:"note,omitempty"` // what limits a miss
}

// Goals, as they were set for the library.
const (
	goalAcquire      = "acquire + release ≤ 1.3× two plain writes"
	goalRunIf        = "RunIfLeader throughput ≥ 0.8× best peer"
	goalRunIfSession = "RunIfLeader on a session: throughput ≥ best peer"
	goalContended    = "RunIfLeader on a session: contended sections/s ≥ best peer, longest wait below its"
	goalHandover     = "graceful handover p99 < 10 ms"
	goalFailover     = "crash failover p99 < TTL + 300 ms"
	goalBytes        = "held campaign ≤ 4 KiB (heap + stacks)"
	goalGoroutine    = "held campaign ≤ 1 goroutine"
	goalTraffic      = "keep-alive traffic independent of the number of locks"
)

// evaluate checks every goal against the rows of rep.
func evaluate(rep *Report) []Target {
	var out []Target
	for _, backend := range backendsIn(rep) {
		out = append(out, acquireTargets(rep, backend)...)
		out = append(out, throughputTargets(rep, backend)...)
		out = append(out, contendedTargets(rep, backend)...)
		if r := rep.Find("handover", backend, "hustings Resign → Elected", ""); r != nil {
			out = append(out, Target{Goal: goalHandover, Backend: backend, Measured: "p99 " + fmtDur(r.Latency.P99), Met: r.Latency.P99 < 10*time.Millisecond})
		}
		if r := rep.Find("failover", backend, failoverSubject, ""); r != nil {
			ttl := time.Duration(r.Values["ttl_ns"])
			out = append(out, Target{Goal: goalFailover, Backend: backend,
				Measured: fmt.Sprintf("p99 %s (TTL %v)", fmtDur(r.Latency.P99), ttl), Met: r.Latency.P99 < ttl+300*time.Millisecond})
		}
		out = append(out, scaleTargets(rep, backend)...)
	}
	for i := range out {
		if !out[i].Met {
			out[i].Note = missNote(out[i].Goal, out[i].Backend)
		}
	}
	return out
}

func acquireTargets(rep *Report, backend string) []Target {
	h := rep.Find("acquire-release", backend, "hustings Acquire + Release", "")
	if h == nil || h.Values == nil {
		return nil
	}
	// The write baseline is the row whose x_write is 1.
	var w *Row
	for i, r := range rep.Rows {
		if r.Workload == "acquire-release" && r.Backend == backend && r.Values["x_write"] == 1 {
			w = &rep.Rows[i]
		}
	}
	if w == nil {
		return nil
	}
	x := ratio(float64(h.Latency.P50), 2*float64(w.Latency.P50))
	return []Target{{Goal: goalAcquire, Backend: backend, Met: x <= 1.3,
		Measured: fmt.Sprintf("p50 %s = %.2f× two %s (%s each)", fmtDur(h.Latency.P50), x, w.Subject, fmtDur(w.Latency.P50))}}
}

// runTargets are the throughput goals of the RunIfLeader subjects: the
// least ratio to the best peer each must reach. A run without a session
// pays for opening and closing one, so its goal leaves room for that.
var runTargets = []struct {
	subject, goal string
	least         float64
}{
	{subjectRunIfSession, goalRunIfSession, 1},
	{subjectRunIf, goalRunIf, 0.8},
}

func throughputTargets(rep *Report, backend string) []Target {
	var out []Target
	for _, t := range runTargets {
		for _, r := range rep.Select("throughput") {
			if r.Backend != backend || r.Subject != t.subject || r.Baseline == "" {
				continue
			}
			peer := rep.Find("throughput", backend, r.Baseline, r.Param)
			out = append(out, Target{Goal: t.goal + " (" + r.Param + ")", Backend: backend, Met: r.Ratio >= t.least,
				Measured: fmt.Sprintf("%s runs/s vs %s %s: %.2f×", fmtNum(r.Values["ops_per_s"]), r.Baseline, fmtNum(peer.Values["ops_per_s"]), r.Ratio)})
		}
	}
	return out
}

// contendedTargets compares 8 candidates, each on a session of its own,
// taking turns on one lock with the best peer's: sections per second, and
// the longest wait, which a peer that retries on a timer can trade for
// throughput.
func contendedTargets(rep *Report, backend string) []Target {
	r := rep.Find("contended", backend, subjectRunIfSession, "")
	if r == nil || r.Baseline == "" {
		return nil
	}
	peer := rep.Find("contended", backend, r.Baseline, r.Param)
	if peer == nil {
		return nil
	}
	return []Target{{Goal: goalContended, Backend: backend, Met: r.Ratio >= 1 && r.Latency.Max < peer.Latency.Max,
		Measured: fmt.Sprintf("%s sections/s vs %s %s: %.2f×; longest wait %s vs %s", fmtNum(r.Values["cs_per_s"]), r.Baseline,
			fmtNum(peer.Values["cs_per_s"]), r.Ratio, fmtDur(r.Latency.Max), fmtDur(peer.Latency.Max))}}
}

func scaleTargets(rep *Report, backend string) []Target {
	var rows []Row // the points whose campaigns were all elected and held
	for _, r := range rep.Select("scale") {
		if r.Backend == backend && r.Subject == "hustings campaigns" && heldAll(r) {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return nil
	}
	first, last := rows[0], rows[len(rows)-1]
	n := fmtNum(last.Values["locks"])
	bytes, gor := last.Values["bytes_per_campaign"], last.Values["goroutines_per_campaign"]
	out := []Target{
		{Goal: goalBytes, Backend: backend, Measured: fmt.Sprintf("%s B each at %s", fmtNum(bytes), n), Met: bytes <= targetBytes},
		{Goal: goalGoroutine, Backend: backend, Met: last.Values["goroutines"] <= last.Values["locks"]+1,
			Measured: fmt.Sprintf("%.3f each: %s goroutines for %s campaigns (one each, and the shared session's)", gor, fmtNum(last.Values["goroutines"]), n)},
	}
	if rep.Find("scale", backend, "hustings campaigns", "") != nil && first.Values["locks"] != last.Values["locks"] {
		r1, rn := first.Values["requests_per_s"], last.Values["requests_per_s"]
		if backend != "memory" {
			out = append(out, Target{Goal: goalTraffic, Backend: backend, Met: rn <= 1.5*r1+1,
				Measured: fmt.Sprintf("%s requests/s holding %s, %s holding %s", fmtNum(r1), locks(first.Values["locks"]), fmtNum(rn), locks(last.Values["locks"]))})
		}
	}
	return out
}

// backendsIn lists the backends of rep's rows in their first order; the
// fence.Guard rows, which ran on none, are not one.
func backendsIn(rep *Report) []string {
	var out []string
	for _, r := range rep.Rows {
		if r.Backend != guardBackend && !slices.Contains(out, r.Backend) {
			out = append(out, r.Backend)
		}
	}
	return out
}

// missNote says what limits a missed goal on backend, from what the
// library and the backends do (see their package docs and DESIGN.md); ""
// when nothing is known.
func missNote(goal, backend string) string {
	for _, g := range []string{goal, strings.Split(goal, " (")[0]} {
		if n, ok := missNotes[g+"/"+backend]; ok {
			return n
		}
		if n, ok := missNotes[g]; ok {
			return n
		}
	}
	return ""
}

var missNotes = map[string]string{
	goalAcquire + "/redis":         "each call is one round trip, but one Lua script: on a free lock the acquire makes 4 redis.calls (one MGET of the session key, lock and fence counter, TIME, one MSET of lock and counter, PUBLISH) and the release 3 (MGET, DEL, PUBLISH; two more when a waiter marked the lock wanted), where a bare SET NX makes one; each script takes the server 8–10 µs (INFO commandstats over a loop of 20,000), a SET NX about 1",
	goalAcquire + "/postgres":      "each of acquire and release is one statement on the UNLOGGED locks table (no WAL, so no commit waiting for an fsync, where the baseline's INSERTs wait for one); the acquire also reads its own session row and the epoch row; neither NOTIFYs unless the lock is watched",
	goalAcquire + "/kubernetes":    "the acquire is a read and an update of the lock Lease (a create the first time), the release one update conditioned on the version its take left, each write through the apiserver to etcd and its fsync, where the baseline is one create",
	goalAcquire + "/nats":          "the acquire of a free lock is two round trips (the lock record read from the stream's leader beside the session's own, then the write on the revision read), the release one (the removal beside a read of the session record), where the baseline is one KV Create; no fsync on either side (JetStream's default sync interval)",
	goalContended + "/nats":        "a waiter is woken by the bucket's feed (one ordered consumer per backend, every write of the bucket, session renewals included) and then reads before it writes; the raw-KV peer's waiters each watch their one key and try the create at once",
	goalAcquire + "/mysql":         "the acquire of a free lock is a transaction of four round trips (BEGIN, the token counter, the INSERT or UPDATE of the lock row, COMMIT waiting for the log flush), the release one or two statements, where the baseline is one INSERT … ON DUPLICATE KEY UPDATE",
	goalRunIf + "/mysql":           "the peer is a GET_LOCK loop, which writes nothing (no row, no expiry, no token) and is lost with its pooled connection; a run of ours is the acquire's transaction and the release, each committed",
	goalContended + "/mysql":       "a waiter in another process sees a release at its next poll (WithPoll, 1 s by default), against GET_LOCK's waiters, which queue inside the server",
	goalHandover + "/mysql":        "a waiter in another process sees a release at its next poll (WithPoll, 1 s by default): MySQL has no notification",
	goalAcquire + "/mongodb":       "measured on FerretDB over SQLite, which writes one document at a time: the acquire reads five documents by _id at once (the server's clock, the session, the lock's root and the states at the versions last seen), then inserts the next state and at once deletes the state two back, finds any state above it by name (a scan of the collection on FerretDB) and reads the root and the restart mark; the release is the same write; the baseline is one insertOne",
	goalRunIf + "/mongodb":         "the acquire and release of the acquire + release row, against a peer that is one unique insert and one delete (no session, no expiry, no token); FerretDB's SQLite takes one write at a time, so eight goroutines run no faster than one",
	goalContended + "/mongodb":     "a waiter in another process sees a release at its next poll (WithPoll, 1 s by default; FerretDB has no change streams), where the peer's waiters retry their insert at once",
	goalHandover + "/mongodb":      "a waiter in another process sees a release at its next poll (WithPoll, 1 s by default; FerretDB has no change streams)",
	goalAcquire + "/dynamodb":      "measured on dynalite: the acquire is a BatchGetItem of the lock and the session, then the token counter's ADD and the conditional PutItem; the release a DeleteItem beside a read; the baseline is one conditional PutItem",
	goalHandover + "/dynamodb":     "a waiter in another process sees a release at its next poll (WithPoll, 1 s by default): DynamoDB Streams are not used",
	goalFailover + "/consul":       "Consul invalidates a session up to twice its TTL after its last renewal (its TTL is a lower bound), and the lock is free only then",
	goalHandover + "/consul":       "the release is a KV release and the waiter's acquire a KV acquire, each a write through Consul's raft log, plus the blocking query's delivery",
	goalAcquire:                    "each of acquire and release is one write that waits for the server's fsync, plus the session check the backend adds",
	goalRunIf + "/redis":           "two round trips, as redislock's (the session key's SET NX travels with the acquire script; Close frees the lock), but heavier ones: two Lua scripts of 7 redis.calls between them, 8–10 µs each in the server where redislock's delete script takes about 4, and more client work; on the 2 cores the server shares with the clients, CPU is the limit (see the on-a-session row)",
	goalRunIf + "/etcd":            "a run without a session opens and closes one (its lease): three round trips, each a write waiting for an fsync (lease grant, acquire putting the session key beside the lock, revoke), where etcd Mutex on a long-lived session makes two (Mutex with a session per lock, the same work, and RunIfLeader on a session are in the table)",
	goalRunIf + "/zookeeper":       "a run without a session opens and closes one (its lease): two writes waiting for an fsync, as zk Lock's on a long-lived conn (one multi creating the session node with the lock node, one deleting both), but each a multi of two nodes and the session node's data; the same run on a session is in the table",
	goalRunIf + "/postgres":        "the peer is an advisory-lock loop on a pinned connection, which writes nothing: no row, no expiry, no token; a run of ours is two statements that write a row of the UNLOGGED locks table (acquire, release), and without a session two more on the logged sessions table (the session row's insert and delete, each a commit waiting for an fsync). cirello.io/pglock, the durable peer, is not served by the module proxy",
	goalRunIfSession + "/redis":    "two round trips, as redislock's, but heavier ones: on the 2 cores the server shares with the clients, CPU is the limit; measured per run (docs/performance.md, \"RunIfLeader on a session against its peers\"), the two scripts alone, sent by hand, cost 1.15–1.3× redislock's CPU (client and server), and the engine adds about a tenth",
	goalRunIfSession + "/etcd":     "two writes waiting for an fsync, as etcd Mutex's, but the acquire Txn also compares the session key (alive) and the release compares create revision and lease, each run claims its name on the session and takes a turn, and the session's loss watch receives both writes (it sees every write of a lock key, so that a key rewritten behind its holder's back is lost)",
	goalRunIfSession + "/postgres": "two statements that write an UNLOGGED row, against an advisory-lock loop that writes nothing (see RunIfLeader's row): a loop of the two cheapest such statements on a pinned connection ran at 0.41-0.51× the advisory loop (backends/postgres/doc.go, \"What a run costs\")",
	goalContended + "/redis":       "a waiter is woken by the release it waited for (the wanted mark) and yields 1–3 ms so that a holder running again keeps the lock; redislock's waiters poll every 10 ms and its holder keeps the lock between runs, at the cost of a longest wait ten times ours",
	goalContended + "/etcd":        "every release wakes every waiter, who race for the lock (one that waited under 50 ms yields 1–3 ms, so that a holder running again keeps it), and a failed acquire Txn still goes through raft (its Then holds a Put); sections/s is far above etcd Mutex's, its longest wait above Election's, whose waiters queue",
	goalContended + "/zookeeper":   "the waiters queue in FIFO order (sequential nodes), as zk Lock's, and a turn costs the same five requests, two of them writes (its node, a listing, the watch on its predecessor, a listing once woken, the delete; it was 16.5); what is left is the client's CPU on the 2 cores it shares with the server, about 350-410 µs a section against zk Lock's 240-295 µs (the engine's contexts and timers, the watch's goroutine, the session), so sections/s stayed at 0.90-0.97× in three runs, the longest wait below zk Lock's in two",
	goalRunIf + "/kubernetes":      "a run without a session creates its session Lease and deletes it after: four writes through the apiserver to etcd's fsync (session, take, release, session), where client-go's LeaderElector makes two (take, release); on a session a run is the two and at or above client-go (the on-a-session rows)",
	goalContended + "/kubernetes":  "a waiter is woken by the release through the apiserver's watch, so the lock goes to a waiter at each turn (a handover's two writes and the watch's delivery); client-go's waiters poll (100–220 ms tuned), so the candidate that just released takes it again at once in most turns: more sections, a longest wait four times ours",
	goalContended + "/postgres":    "each section is two statements that write an UNLOGGED row, and each release NOTIFYs every waiting candidate's listener, whose waiters all try again (one wins, the others read the lock held), against an advisory lock whose waiters queue inside the server and are woken one at a time",
	goalBytes + "/kubernetes":      "counted in the bench process, which also runs the apiserver's etcd (kubetest embeds it): a heap profile of 1,000 held campaigns (MemProfileRate 1, library at 7c3d679) put about 2 KB per lock in etcd's in-memory raft log and index, the campaigns themselves about 2.6 KB, the backend's per-lock sight and grant 0.2 KB, and 0.8–1 KB in the session's keep-alive LIST of its lock Leases, in flight when the heap was read (gone since 88b6aff: the Backend's watch confirms the locks, 3.8 → 3.2 KB a campaign)",
	goalBytes:                      "a held campaign is about 2.8 KB of heap and no goroutine; what is over it is the backend's: on ZooKeeper an exists watch per lock; on etcd the embedded server's own index and lease entries of each key (about 340 B) count too",
	goalHandover:                   "the release and the waiter's acquire each wait for a write (and an fsync on etcd and ZooKeeper), plus the watch's delivery",
	goalHandover + "/kubernetes":   "the release is one update of the lock Lease (conditioned on the version its take left), the waiter's acquire one update (from the Lease its watch delivered), each through the apiserver to etcd and its fsync, plus the apiserver's watch delivering the release to the waiter: two writes of a few milliseconds each, on the 2 cores the apiserver and its etcd share with the candidates",
	goalFailover + "/etcd":         "etcd frees an expired lease only at its next expiry check (every 500 ms), so the lock outlives the TTL by up to that",
	goalFailover:                   "the waiter sees an expired session only when it next polls (retry interval + jitter)",
	goalTraffic + "/redis":         "each renewal also confirms the session's locks, in the same round trip: the keep-alive sends a PEXPIRE and one script, but the script's reads count too (one MGET per 1,000 locks)",
	goalTraffic + "/etcd":          "each renewal confirms the session's locks by its loss watch (a read of the revision and a progress request beside the lease keep-alive), but reads them, one Txn per 128 locks (etcd's default --max-txn-ops), while the watch is behind, broken or compacted away",
	goalTraffic + "/zookeeper":     "each renewal also confirms the session's locks, in the same round trip: the renewing multi checks up to 1,000 lock nodes, and each further 1,000 add a multi",
	goalTraffic + "/postgres":      "the keep-alive is one statement per tick at any number of locks, and writes the session row alone (a lock held by a session lives while its session does); it reads the session's locks back to confirm them",
}

// locks formats a number of locks: "1 lock", "10,000 locks".
func locks(n float64) string {
	if n == 1 {
		return "1 lock"
	}
	return fmtNum(n) + " locks"
}
