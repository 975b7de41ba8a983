// Package nats keeps Hustings locks in a NATS JetStream key-value bucket,
// for services that already run NATS. It takes the caller's
// jetstream.JetStream (github.com/nats-io/nats.go/jetstream) and never
// closes its connection. It needs nats-server 2.11 or later (per-key
// TTLs).
//
// # The bucket
//
// CreateBucket makes the bucket (WithBucket, default "hustings"): one
// value per key, no bucket-wide TTL, per-key TTLs whose expiry leaves a
// marker kept 10 s. It is idempotent; New never creates anything, and a
// backend whose bucket is missing fails with backends.ErrUnavailable
// naming CreateBucket. Every record is a key of it:
//
//   - session.<session ID>: one per Open, written with the session's TTL
//     as its per-key TTL (JetStream keeps TTLs in whole seconds: it is
//     rounded up). The server removes it that long after its last write,
//     by its own clock, leaving a marker. KeepAlive writes it again,
//     conditioned on its last revision, so a session whose record
//     expired is never brought back.
//   - lock.<name>: the holding session's ID and the candidate's. A lock is
//     held while the session its record names lives; the keep-alive
//     writes the session record alone, however many locks it holds. A
//     lease is the record's own TTL. A release with a hold writes the
//     record again as held by nobody alive, with the hold as its TTL.
//   - member.<group>.<session ID>: a registry entry (backends.Registry),
//     listed while its session lives.
//
// Names are escaped into keys: letters, digits, '-' and '_' stay, every
// other byte becomes =XX.
//
// # Writes and reads
//
// Every write is a JetStream publish conditioned on the key's last
// revision (Nats-Expected-Last-Subject-Sequence), which the stream
// checks and applies in one step: the compare-and-swap of every record.
// Acquire reads the lock record (from the stream's leader) and, beside
// it, the session's own; a lock another live session holds is reported
// held by that read and one of the holder's session record. A free lock (no record, a marker, a record of nobody's, or
// a record whose session the stream's leader no longer has) is taken by
// a write conditioned on the revision read; two candidates racing for it
// cannot both win. KeepAlive writes the session record and confirms its
// locks in one round trip whatever their number: for a session whose
// losses are pushed (Losses), by the bucket's feed having delivered the
// renewal, and so every earlier write to the locks' records (one request
// a tick); otherwise, or while the feed does not cover a lock, by one
// multi-key get per 1,024 locks sent beside the renewal (the server's
// work growing with them). A lock whose record changed since its take is
// reported by Lost.
//
// Reads come in two kinds: direct gets, which any replica of a
// replicated bucket may answer, possibly a moment behind the leader, and
// reads of the stream's leader (the JetStream message API). A write never
// relies on a direct get alone: the lock record a write is conditioned
// on, Holder's answer, and any "gone" a direct get finds of a session or
// a lock KeepAlive confirms, come from the leader. A replicated stream
// refuses a conditioned write, unchecked, while another one on the same
// subject is in flight (error 10164, which nats.go's KV API reads as
// "key exists"); nothing was written, and the backend sends it again
// after a short pause, up to 20 times.
//
// A create over a marker is conditioned on the marker's revision, and a
// delete between the read and the write (nats-server #5162, where the KV
// API's Create fails with "wrong last sequence" for an absent key) makes
// it read again instead of failing.
//
// # Fencing
//
// A lock's token is the revision (stream sequence) of the write that took
// it: strictly increasing per bucket, across holders, restarts and
// expiries, for as long as the bucket's stream exists. Fence writes a key
// of the bucket only if the lock's record is still the one its term's
// take wrote, in the same step (Nats-Expected-Last-Subject-Sequence-
// Subject).
//
// # Wake-ups and pushed losses
//
// Watch and the sessions' Losses share one feed per Backend: an ordered
// consumer of every write to the bucket, made again by the client from
// the sequence after the last it delivered when it reconnects. A write to
// a lock record wakes its watchers; the marker of a session record that
// expired or was removed wakes the watchers of the locks it held (a
// crashed holder is pushed, not polled). The same feed reports a write to
// a held lock's record after its take to the holding session at once.
// The feed exists while a watch or a session's Losses does.
//
// # Concurrency
//
// A Backend and its sessions are safe for concurrent use. Calls block for
// their round trips, bounded by their context: Open, KeepAlive, Close
// and Fence one; Acquire one for a lock of its own, two for a lock held
// by another live session (its record, then its holder's session record)
// or to take a free one, four to take one over (the holder's session
// read again from the leader); Release one (the removal beside a read of
// the session record) for a lock it was granted, released without a hold,
// else two; Holder and Members two (Members a removal more per dead
// entry); Register two. The connection's own
// reconnection carries calls across a server restart.
//
// # What it cannot promise
//
//   - Expiry is the server's clock: a session ends ttl (rounded up to
//     whole seconds) after the server stored its last write. The local
//     deadlines of package campaign count from the start of the client's
//     call, so they end first; a server clock that jumps ends sessions
//     early or late.
//   - A replicated bucket (WithReplicas) orders writes through its
//     stream leader, so the compare-and-swap holds (the contract suite
//     runs on one of three replicas). A lock whose holder's session a
//     lagging replica still shows is reported held a moment longer.
//     Replicas expire keys by their own clocks, and may keep an expired
//     key longer than the leader (nats-server #3653): after a leader
//     change, a crashed holder's lock can stay taken that long. The
//     stream's leader changing also means its clock: sessions end early
//     or late by the skew between the servers' clocks.
//   - JetStream acknowledges a write once it is in the server's file,
//     not fsynced (sync_interval defaults to 2 minutes): a machine crash
//     of a single server can lose acknowledged writes, the revisions
//     they took among them, so a lock granted may be granted again under
//     a token already handed out. Run a replicated bucket, or the server
//     with sync_interval: always.
//   - Deleting the bucket's stream starts its revisions again from 1:
//     tokens go backwards. Never delete the bucket while its locks guard
//     a resource.
//   - A paused process (GC, SIGSTOP) may still believe it leads after its
//     session expired on the server; its deadline and the token (Fence)
//     bound the harm.
//   - A lock's record deleted behind its holder's back is pushed by the
//     feed; while the feed is down (a reconnect), it is found at the
//     holder's next KeepAlive.
//   - Markers of removed records stay 10 s; lock records stay, one small
//     key per name ever used; registry entries of dead sessions are
//     removed by later Members calls. Members lists at most 1,024 entries
//     per group.
package nats
