// Package nats keeps Hustings locks in a NATS JetStream key-value bucket,
// for services that already run NATS. It takes the caller's
// jetstream.JetStream (github.com/nats-io/nats.go/jetstream) and never
// closes its connection. It needs nats-server 2.11 or later (per-key
// TTLs). It is a driver of the shared core for compare-and-swap stores
// (backends/internal/record), which gives the sessions, locks, tokens,
// watches and pushed losses their contract.
//
// # The bucket
//
// CreateBucket makes the bucket (WithBucket, default "hustings"); New
// creates nothing, and a backend whose bucket is missing fails with
// backends.ErrUnavailable naming CreateBucket. Every record is a key:
//
//   - session.<session ID>: one per Open, with the session's TTL as its
//     per-key TTL (whole seconds, rounded up): the server removes it that
//     long after its last write, by its own clock, leaving a marker.
//     KeepAlive writes it again on its last revision, so a session whose
//     record expired is never brought back.
//   - lock.<name>: the holding session's ID and the candidate's, held
//     while that session's record lives. A lease is the record's own TTL;
//     a release with a hold writes it again as held by nobody alive, with
//     the hold as its TTL.
//   - member.<group>.<session ID>: a registry entry, listed while its
//     session lives, removed by Members once it is gone.
//
// Names are escaped into keys (LockKey): letters, digits, '-' and '_'
// stay, every other byte becomes =XX.
//
// # Writes, reads and the feed
//
// Every write is a publish conditioned on the key's last revision
// (Nats-Expected-Last-Subject-Sequence). A take over a marker is
// conditioned on the marker's revision; a delete in between
// (nats-server #5162) is a conflict, and the lock is read again. A
// replicated stream refuses a conditioned write, unchecked, while another
// on the same subject is in flight (error 10164): it is sent again after
// a short pause, up to 20 times. What a write relies on (the lock record
// it is conditioned on, a session record found gone, Holder) is read from
// the stream's leader. A session record found live (a waiter's hint) is
// read from any replica, unchecked; multi-key reads (KeepAlive's, Members,
// List) from any replica checked to have applied every write this Backend
// made or read, so that a Backend reads its own writes: a multi-key get's
// answer names the sequence it read up to, and one below the Backend's
// last is asked again (a replica answers before it applied what the leader
// acknowledged; the server's own check, min_last_seq, was removed before
// 2.12 shipped: nats-server #7285). A listing whose replica found no key
// (and so named no sequence) is read from the leader. Another process's
// writes are seen once the replica that answers applied them. A lock's
// token is the revision of the write that took it: strictly increasing per
// bucket, across holders, restarts and expiries. Fence writes a key only
// if the lock's record is still the one its term's take wrote, in the same
// step.
//
// KeepAlive writes the session record beside a read of the held locks'
// records (one multi-key get per 1,024), or alone for a session whose
// losses are pushed (Losses) once the feed covered its locks: when the
// feed delivered the renewal, it delivered every earlier write to them.
// Watch, WatchReleases and Losses share one feed per Backend, an ordered
// consumer of every write to the bucket, made again from the next
// sequence when the client reconnects: a write to a lock record wakes its
// watchers and is a loss to a session that took it earlier; the marker of
// a session record that expired or was removed wakes the watchers of its
// locks (a crashed holder is pushed, not polled) and loses its locks.
//
// # What it cannot promise
//
//   - Expiry is the server's clock: a session ends ttl (rounded up to
//     whole seconds) after the server stored its last write. The local
//     deadlines of package campaign count from the start of the client's
//     call, so they end first; a server clock that jumps ends sessions
//     early or late.
//   - A replicated bucket (WithReplicas) orders writes through its stream
//     leader, so the compare-and-swap holds. Replicas expire keys by their
//     own clocks, and may keep an expired key longer than the leader
//     (nats-server #3653): after a leader change, a crashed holder's lock
//     can stay taken that long, and sessions end early or late by the
//     skew between the servers' clocks.
//   - JetStream acknowledges a write before it is fsynced (sync_interval
//     defaults to 2 minutes): a machine crash of a single server can lose
//     acknowledged writes, and a token can be handed out twice. Run a
//     replicated bucket, or the server with sync_interval: always.
//   - Deleting the bucket's stream starts its revisions again from 1:
//     tokens go backwards. Never delete the bucket while its locks guard
//     a resource.
//   - A paused process (GC, SIGSTOP) may still believe it leads after its
//     session expired on the server; its deadline and Fence bound the
//     harm.
//   - Markers stay 10 s; lock records stay, one small key per name ever
//     used. Members lists at most 1,024 entries per group.
package nats
