// Package etcd keeps Hustings locks, and candidate registries, in etcd (v3
// API), through a client the caller dials and closes: New never dials, and
// nothing in this package closes the client.
//
// # Sessions
//
// Open grants one etcd lease per session, of the TTL rounded up to whole
// seconds (at least one; the server may raise it to its minimum, never
// lower: a shorter grant is refused with backends.ErrInvalid, because
// callers compute their deadlines from the TTL they asked for). Every lock
// key the session takes is bound to the same lease, as is its registry
// entry in each group, so one KeepAlive renews them all (one keep-alive
// request, whatever the number of locks), and when the lease expires or
// Close revokes it, etcd deletes them all at once. etcd checks for expired
// leases periodically (every 500 ms), so a lost session's locks are freed
// somewhat after the TTL, never before.
//
// A session key, bound to the lease too, lets a transaction check that the
// session lives (it exists). Open does not put it: the grant is its one
// request and its one write. The session's first transaction (an Acquire,
// or a Release) puts it, where it would otherwise read it, so a run that
// opens a session, takes a lock and closes (campaign.RunIfLeader without a
// session) is three writes: the grant, the acquiring transaction and the
// revoke. etcd refuses a put bound to a lease it no longer knows, failing
// the whole transaction with "lease not found": the put proves the session
// alive as the read would, writes nothing for a lost session, and can never
// bring the key back once the lease is gone. Until a transaction that put
// the key has answered, each one puts it, so first calls in flight at once
// each put the same key, which keeps the create revision of the first.
// KeepAlive, Register and Close need no session key and put none.
//
// # Locks and fencing
//
// A lock is the key prefix+"lock/"+name. Acquire is one transaction: if
// the session key exists and the lock key does not, put the lock key bound
// to the session's lease; else read both (the session's first Acquire puts
// the session key in either branch instead of comparing or reading it, see
// Sessions). The fencing token is the lock key's create revision: it
// strictly increases per name for the life of the cluster's data, across
// server restarts and compactions, because etcd never reuses a revision. A
// session that acquires a lock it holds gets the same token back. A session
// whose lease is gone gets backends.ErrSessionLost, never a lock, even if
// the lock is free: a zombie candidate cannot take a lock on the strength
// of a dead session.
//
// A lock acquired with a lease > 0 is also bound to a second lease of that
// length (rounded up to whole seconds, so the lock may live up to a second,
// plus etcd's expiry check, past it; never less), granted first (one more
// round trip): the lock key stays bound to
// the session's lease, and a guard key, bound to the second lease, must
// exist for the lock to count as held. Once the guard is gone the lock is
// free: Holder reports it free, and the next Acquire deletes the stale key
// (if it is unchanged) and takes the lock with a new token. Such a lock is
// thus lost at the end of its lease or of its session, whichever comes
// first, and reading its holder takes one more round trip.
//
// Release is a transaction that deletes the lock key only if its create
// revision is the token and it is bound to this session's lease, so a
// retried Release never deletes a later holder's key. With a hold > 0 the
// key is instead bound to a new lease of the hold (one more round trip)
// and marked held by nobody alive: its create revision, and so Holder's
// token, stay, and it survives the session's Close.
//
// # Ownership
//
// Renewing the lease proves nothing about the locks: a lock key deleted
// while the lease lives (by an operator, or a buggy tool) is gone, and
// another candidate may take it. So KeepAlive also confirms every lock
// the session was granted and has not released, in one of two ways.
//
// With the session's loss watch following (Losses was called, as every
// campaign.Session does), the watch, of every lock key from the revision
// after the session's lease was granted, has already moved each lock whose key was
// deleted, rewritten or rebound, or whose guard key went, to Lost when
// the server pushed the change. KeepAlive then only has to know that the
// watch is not behind: beside the lease keep-alive request it reads the
// session key's count (a linearizable read, so its revision is no older
// than the call; the key need not be put yet), asks the watch's stream
// for a progress notification, and returns once one shows that the watch
// has seen every change up to that revision. That is three requests, whatever the number of locks, and no
// per-lock state beyond the grants the session remembers. Only progress
// notifications count: etcd sends a watch that is catching up its events
// in batches whose revision runs ahead of them. A server sends a
// requested notification after the events it covers since the fix of
// etcd issue #15220 (backported to 3.4 and 3.5); an older one may send
// it first, and a loss then reaches Lost by the watch's push a moment
// after the KeepAlive that should have found it.
//
// Otherwise (no loss watch; its watch broken or compacted away, which
// may have skipped changes; no progress within progressWait, 500 ms) it
// reads the locks, alongside the keep-alive request and in the same
// round trip of latency: read-only transactions that compare each lock
// key's mod revision with its token (Acquire created the key at that
// revision, and only Release writes it after, so a key deleted,
// recreated, overwritten or bound to another lease fails), and that a
// guarded lock's guard key exists. When every compare holds the answer
// is empty; otherwise the same transaction reads the keys. Either way the
// locks found gone are reported by Lost while KeepAlive returns nil. A
// lock whose guard lease ended is reported too. A read at a revision past
// what a compacted watch skipped lets the watch confirm again.
//
// etcd takes at most --max-txn-ops (default 128) compares per
// transaction, so reading the locks of a session holding n costs
// ⌈n/128⌉ transactions (a lock acquired with a lease counts twice), all in
// flight at once with the keep-alive request on the client's one
// connection: 10,000 locks cost 79 transactions, each about 11 KB for
// names of a dozen bytes, and one round trip once gRPC has sized its
// flow-control window for the link (until then, a round trip more per
// window's worth). A server configured with a lower --max-txn-ops refuses
// them, and such a KeepAlive of a session holding that many locks fails.
//
// # Candidate registry
//
// A session's entry in a group is one key,
// prefix+"member/"+group+"\x00"+the session's lease ID in hex, bound to
// the session's lease; its value is the JSON of the candidate's ID, score,
// weight and metadata. Group names have no control characters, so the
// "\x00" keeps a group's keys apart from those of a group whose name
// extends it.
//
// The Order is the key's create revision. Register is one put: the first
// creates the key and so assigns the Order; later ones overwrite the same
// key, which keeps its create revision, so the Order stays while Score,
// Weight and Meta are replaced. Orders strictly increase per group (per
// cluster, in fact) for the life of the cluster's data, as fencing tokens
// do. Deregister deletes the key (nothing to delete is not an error); a
// later Register of the session creates it again, with a new, higher
// Order. Members is one prefix read sorted by create revision.
//
// An entry lives exactly as long as its session's lease: Close revokes
// the lease and etcd deletes the entry with the session's locks, in one
// step. A session that stops renewing stays listed for its TTL after its
// last renewal (longer after an etcd leader change, which extends every
// lease), then until etcd's expiry check, every 500 ms, revokes its lease
// and deletes the entry. A Register by a session whose lease is gone fails
// with backends.ErrSessionLost and writes nothing: a zombie cannot put
// itself back in the list.
//
// # Wake-ups
//
// Watch is an etcd watch on the lock key
// and its guard key. Watch first reads the current revision and watches
// from the next one, so that etcd pushes changes at once instead of
// catching the watcher up on its next pass; on compaction it reads again
// and watches from there, and signals. Expiries are signalled too: the
// server deletes the keys. WatchReleases (the Backend is a
// backends.ReleaseWatcher) is the same watch with the server filtering
// out puts: a waiting run is woken when the lock may be free, not when
// another candidate takes it; once woken, a run that began waiting less
// than 50 ms before pauses a millisecond or two, so that one waiting
// longer tries first, as on every backends.ReleaseWatcher.
//
// # What blocks
//
// Every call is one or two round trips (KeepAlive with the loss watch:
// one for the keep-alive and the read in parallel, then the wait for the
// watch's progress; without it: one, of ⌈n/128⌉+1 requests in parallel)
// and blocks until the server answers or ctx ends; a call with a done ctx sends nothing and returns an
// error matching backends.ErrUnavailable and ctx.Err(). Local checks come
// first: a closed session returns backends.ErrSessionClosed, bad input
// backends.ErrInvalid. A Close that does not reach the server leaves the
// session's locks to expire with its lease.
//
// # Channels and concurrency
//
// Backend and every session are safe for concurrent use. No constructor
// starts a goroutine. KeepAlive starts one per confirming transaction, or
// one for the read of the revision, and waits for them all before it
// returns. The first Losses starts the loss watch's goroutine, which
// Close stops and waits for. Watch starts one that outlives
// it: it pumps the etcd watch into the returned channel and closes it
// when ctx ends (or the client is closed, or the watch breaks); cancel
// ctx to stop it.
//
// # Errors
//
// etcd's "lease not found" becomes backends.ErrSessionLost; a TTL the
// server refuses becomes backends.ErrInvalid; every other failure (no
// connection, no leader, timeouts, a done context) becomes
// backends.ErrUnavailable, wrapping the client's error. A KeepAlive whose
// lease is gone returns ErrSessionLost whatever its confirmation found; one
// that renewed the lease but could not confirm the locks returns
// ErrUnavailable.
//
// # What it cannot promise
//
// Lease expiry is measured by the etcd leader's clock. When a new leader
// takes over, or a restarted server comes back, etcd extends every lease
// by its TTL, so a lock can outlive its holder's last renewal by more than
// the TTL (never less). A request that timed out on the client may still
// be applied later by the server: an Acquire then leaves the lock held by
// the session (its next Acquire returns the same token), a Release frees
// it. etcd cannot stop a paused process from acting on a stale belief:
// callers bound their belief with a local deadline (package campaign) and
// protected resources check the fencing token.
package etcd
