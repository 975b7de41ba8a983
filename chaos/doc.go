// Package chaos is Hustings' fault-injection suite; it has tests only.
//
// For each real backend (Redis, etcd, ZooKeeper, PostgreSQL, Kubernetes
// Leases on a kube-apiserver, NATS JetStream KV) TestChaos starts the server, a fenced
// resource, 5 candidate processes on one lock and 8 on a group of 3 slots
// (3 and 5 in make test's short profile). Each candidate is this test
// binary re-run as a node
// (see node_test.go): a campaign or group campaign that prints its events
// as JSON lines, writes to the fenced resource with its token while it
// leads, and reports its own stalls. Each reaches the server through its
// own in-process proxy (internal/faultlink), so one candidate's link can
// be cut alone.
//
// A seeded schedule then injects, one at a time: SIGKILL of a leader (and a
// new candidate in its place), SIGTERM of a leader (likewise), SIGSTOP of a
// leader for 0.5, 1, 2 or 5 TTLs, a blackhole, reset or 200 ms ± 50 ms
// latency on one candidate's link, and a restart of the server. After each
// it waits for every belief to match the backend. Meanwhile the harness
// records its own stalls and the server's slow answers to direct reads and
// renewals (meter_test.go): the short profile holds liveness net of them,
// since no library elects a leader while its server does not answer. Package
// chaos/history checks the run's record.
//
// make test runs the short profile (20 s of faults per backend); make chaos
// runs 10 minutes per backend with the bounds. See TestChaos for
// the environment variables.
package chaos
