// Package consul keeps Hustings locks in Consul's KV store, tied to
// Consul sessions, for services that already run Consul. It takes the
// caller's *api.Client (github.com/hashicorp/consul/api) and never
// changes or closes it. It is a driver of the shared core for
// compare-and-swap stores (backends/internal/record), which gives the
// sessions, locks, tokens, watches and pushed losses their contract. It
// is tested against Consul 1.14 (consultest: `consul agent -dev`, one
// server).
//
// # Keys and sessions
//
// Every record is a key under the prefix (WithPrefix, default
// "hustings/"):
//
//   - session/<session ID>: one per Open, held by a Consul session made
//     for it with the Open's TTL, behavior delete, no health check, and
//     a lock-delay of 0. Consul's default lock-delay (15 s) would keep
//     every key a crashed holder held from the next holder for 15 s,
//     stalling each failover; with 0 a key is free as soon as Consul
//     invalidated its session. Open is two round trips (the session,
//     then its key); KeepAlive renews the Consul session.
//   - lock/<name>: the holding session's ID and candidate, held by its
//     Consul session, so that Consul deletes it, in the same step as it
//     ends the session, when the session is destroyed (Close) or
//     invalidated (TTL). A lease or a hold is an expiry in the value,
//     judged by the clients' clocks; a hold is held by no session.
//   - member/<group>/<session ID>: a registry entry, held by its
//     session; its order is the key's CreateIndex.
//
// In names, '%' and '/' are escaped as %25 and %2F (LockKey).
//
// # Writes, reads and fencing
//
// Every lock write is one transaction (/v1/txn): a take is a
// check-not-exists, or a delete-cas at the ModifyIndex read, then a lock
// op by the taking session; a release is a delete-cas; a hold is a
// delete-cas and a set. A lock's token is the ModifyIndex of the write
// that took it, a raft index: strictly increasing across every key of
// the cluster, holders, restarts and expiries. Reads are read-only
// transactions (get-or-empty), served by the leader: Acquire reads the
// lock key and its own session key in one. KeepAlive renews the Consul
// session and, in parallel, reads the held locks' keys (one transaction
// per 128): one round trip whatever their number.
//
// FenceOp is a check-index on the lock key at the token, to put first in
// a transaction of the caller's own KV writes; Fence runs one.
//
// # The feed
//
// Watch, WatchReleases and the sessions' Losses share one feed per
// Backend: a blocking query on the whole prefix, made again from the
// index of its last answer. A lock key written or deleted wakes its
// watchers and reports a write after a take to the holding session; a
// session key deleted (the session ended) loses the session's locks. A
// lock deleted or overwritten behind its holder is so revoked within a
// round trip of the change, not at the next keep-alive (api.Lock notices
// it only when its session check comes round: consul#18271).
//
// # The client
//
// The backend has up to 64 calls in flight per session, plus the feed.
// The Go client's default transport keeps GOMAXPROCS+1 idle connections:
// give it a transport with MaxIdleConnsPerHost of 64 or more (consuldial
// does), or it opens and closes connections by the thousand, into the
// server's limit of 200 per client address (limits.http_max_conns_per_client).
//
// # What it cannot promise
//
//   - Session TTLs are bounded by the server: from session_ttl_min (10 s
//     unless the servers are configured lower) to 24 h. A TTL outside
//     that range fails Open with backends.ErrInvalid; it is never
//     raised silently.
//   - Consul invalidates a session up to twice its TTL after its last
//     renewal (its timers run at 2×TTL). A holder's term ends by its own
//     deadline, within the TTL, so this is safe; but after a crash the
//     waiters see the lock free only when Consul invalidates the session:
//     a failover takes up to 2×TTL. A KeepAlive that reaches Consul after
//     the TTL but before the invalidation renews the session, its locks
//     kept (nobody could take them meanwhile); the terms ended at their
//     deadlines all the same.
//   - Leases and holds are judged by the clients' clocks (Consul has no
//     per-key expiry and no clock to read): clients whose clocks differ
//     end them early or late by the skew. Locks without a lease depend on
//     no client clock.
//   - Every change under the prefix answers the feed's blocking query
//     with every key under it (Consul's blocking queries return the whole
//     result): with many locks, each change costs the server and every
//     Backend's feed work in proportion to them.
//   - A cluster that loses its raft state (every server's data, or a dev
//     agent restarted) starts its indexes over: tokens go backwards.
//     Restore from a snapshot (which keeps the index), never start empty,
//     while tokens guard a resource.
//   - Reads and the feed use Consul's default consistency (the leader's
//     state, without a check that it still leads): in the short window
//     of a leader change a read may be stale; writes are conditioned, so
//     the lock itself holds, but a wake-up or a loss may come late.
//   - FenceOp does not judge a lease by its expiry, nor whether the
//     holder's session is past its TTL but not yet invalidated.
//   - A paused process (GC, SIGSTOP) may still believe it leads after its
//     session expired on the server; its deadline and the fence bound
//     the harm.
//   - A released lock's key is deleted (Consul keeps a tombstone for a
//     while); a hold's key stays until the next take of its name.
package consul
