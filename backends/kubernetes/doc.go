// Package kubernetes keeps Hustings locks in coordination.k8s.io/v1
// Leases of one namespace, through the caller's client-go clientset
// (k8s.io/client-go/kubernetes.Interface): New never dials, and nothing
// here closes or reconfigures the client.
//
// # Objects
//
// Every Lease of a Backend is named prefix-kind-... (WithPrefix, default
// "hustings") and labelled app.kubernetes.io/managed-by=hustings,
// hustings.io/prefix=prefix and hustings.io/kind=session, lock or member.
// kubectl get leases lists them with their holders.
//
//   - A session Lease per Open, named prefix-session-<24 random hex
//     digits>: holderIdentity the candidate ID, leaseDurationSeconds the
//     TTL rounded up to whole seconds, the TTL itself in milliseconds in
//     the annotation hustings.io/ttl-ms, acquireTime at Open and
//     renewTime at each KeepAlive, leaseTransitions 0.
//   - A lock Lease per lock name (Backend.LockLease gives its name: a
//     readable part of the name and 20 hex digits of its SHA-256; the
//     name itself is in the annotation hustings.io/name). It is created
//     free on first use and never deleted by the backend. Held, it has
//     holderIdentity the candidate ID, the label hustings.io/session
//     naming the session Lease, the annotation hustings.io/token, and
//     acquireTime, renewTime and leaseDurationSeconds as client-go
//     writes them when it takes a Lease; leaseTransitions counts changes
//     of holderIdentity, as client-go counts them. Released, it is what
//     client-go's ReleaseOnCancel leaves: holderIdentity "",
//     leaseDurationSeconds one. Released with a hold, it keeps its holder
//     and token, loses its session label, and records the hold
//     (hustings.io/hold-ms, and leaseDurationSeconds). While sessions
//     wait for it, the annotation hustings.io/waiters lists them, oldest
//     first (JSON: each entry's session Lease, candidate ID and TTL in
//     milliseconds); see Lines and handovers.
//
// # Sessions and expiry
//
// KeepAlive makes one write whatever the number of locks held: an update
// of the session Lease's renewTime, conditioned on its resourceVersion.
// The lock Leases are not renewed: a lock lives while the session its
// label names does. KeepAlive reports by Lost every lock granted that no
// longer names the session under its token. Sessions push
// losses: once Losses was called, the Backend's watch
// (see Backend.Watch) reports such a lock within milliseconds: any
// change of the Lease at a version after the token (the version the
// take was conditioned on) that does not record the session's term.
// Such a session's KeepAlive confirms its locks by the watch: it returns
// once the watch has delivered the renewal's own change of the session
// Lease, and so every change before it. A session that did not call
// Losses, or whose watch has not served it since a LIST of its locks
// (its first KeepAlive, or after the watch broke), or whose renewal the
// watch has not delivered within a quarter of the TTL, lists the lock
// Leases labelled with the session instead (one read, with every such
// Lease's bytes).
//
// The apiserver expires nothing. Expiry is judged as client-go's
// leaderelection judges it: by the observer's own clock, from when it
// first saw the record's current state, never from renewTime or any
// other timestamp another node wrote. A Backend remembers, per session
// Lease, the resourceVersion it last saw and when it first saw it (from
// its reads, its own writes, and its watch); a session is expired once
// that resourceVersion has stayed the same for the TTL. A session this
// process sees for the first time counts as just renewed, so a new
// observer may wait up to a TTL more. The session itself judges from the
// start of its last successful Open or KeepAlive, which precedes its
// write, which precedes any observer's first sight of it: its own
// deadline (and package campaign's, shorter still) ends before any
// observer may judge it expired, as long as the clocks run at about the
// same rate. A lock's own lease and a hold are judged the same way, from
// when the observer first saw the term. A lock whose session Lease is
// gone is free. A session Lease judged expired is deleted, conditioned
// on the resourceVersion judged, before any of its locks is taken: a
// renewal that was on its way when the judgment was made either landed
// first (the delete is refused with 409 Conflict, and the session lives
// on) or is refused itself (its owner finds the session lost), so no
// owner renews a session whose locks were taken.
//
// # Locks and fencing tokens
//
// Acquire reads the lock Lease (creating it free on its first use: one
// more write, once per name), judges its holder (one GET of the holder's
// session Lease if another session holds it, unless the Backend's watch
// delivered that Lease within its TTL) and, if the term is over,
// takes it with one update conditioned on the resourceVersion it read: of
// several candidates racing, one wins and the others get 409 Conflict,
// read again and find it held (ErrHeld). A lock another session visibly
// holds is reported held without a write. While a Watch of the lock is
// open (a waiting campaign's), Acquire starts from the Lease as the watch
// last delivered it instead of reading it, so a waiter woken by a release
// takes the lock with one update: a copy that is stale costs a conflict
// and a read, or an ErrHeld that the watch's next signal corrects, never
// a grant; a copy naming the session itself is not trusted (it may be
// from before its own release) and the Lease is read, unless a release
// named the session from the lock's line (see Lines and handovers).
//
// The token is that resourceVersion, the one the acquiring update was
// conditioned on, recorded in the annotation hustings.io/token by the same
// update. Since Kubernetes 1.35 resourceVersions are decimal integers
// comparable within a resource
// (k8s.io/apimachinery/pkg/util/resourceversion); on etcd they are its
// revisions, which never repeat or go back. The previous term's token was
// the version its own acquiring update replaced, older than the version
// that update made, which is at most the one the next acquirer reads: so
// tokens strictly increase per lock across holders, and across the
// deletion and recreation of its Lease (a new object gets a newer
// version), which leaseTransitions does not survive. A release that names
// a waiter (see Lines and handovers) is the waiter's acquiring update, and
// the same rule holds for it. Fence is an update conditioned on the
// resourceVersion read too, and so is Release: on the version the
// session's take left the Lease at, which the session remembers (48 bytes
// a held lock, and its line while it has one), so a Release sends no read;
// if the Lease changed since (409 Conflict: a fenced write), or carries
// more than the backend's own labels and annotations (an earlier term's
// fenced annotation), Release reads it and updates it conditioned on the
// version read.
//
// # Lines and handovers
//
// A graceful handover is one update. A session that waits for a lock
// (its WatchInLine of the lock is open: the engine's waiting campaigns
// and runs watch so, after an Acquire found the lock held, and try
// again) joins the lock's line at its next Acquire that finds the lock
// held by another session: one update of the lock Lease, conditioned on
// its resourceVersion, adding the session to hustings.io/waiters, once
// per wait. A Release without a hold (and Close, for each lock it
// holds) writes the Lease named for the oldest waiter whose session
// this process judges live, as it judges a holder's (the watch saw it
// renewed within its TTL, else one GET of it, on this process's clock),
// under the token of the version that update is conditioned on, exactly
// as the waiter's own take would have written it; waiters judged dead
// before it leave the line in the same update. The waiter's watch
// delivers the change, and its Acquire adopts the term from the
// delivered copy without a request: a copy that names the session under
// a token from after it joined was written by a release (its own ended
// terms are older). So the handover costs one write on its way (the
// release) instead of two (a release, then the waiter's take once the
// watch delivered it), and the tokens are those a take would have had.
//
// The cost is the join: one write per wait, made when the wait starts,
// not when the lock is handed over; a lock handed back and forth
// between two campaigns costs two writes a round, as before, with one on
// the handover's path instead of two. A holder that listens for its
// losses (Losses) keeps, from the watch, the line it saw of each lock it
// holds that has one, so its Release writes without a conflict or a
// read; otherwise a join since its take costs its Release a conflict and
// a GET. A fenced write, or anything else on the Lease that the backend
// does not write, makes the Release read the Lease first, as before. A
// session that only tries (a run that skips on contention, or any
// Acquire without a WatchInLine open, or with a lease) never joins a
// line, and writes nothing for a held lock. A release with a hold names
// no one: the line stays, and the waiters take the lock when the hold
// ends, each take removing its own entry. Joins, and the releases that
// drop entries, change the Lease without ending its term: the holder's
// loss watch and KeepAlive look at its session label and token, not at
// its resourceVersion, and a Fence that a join overtakes is refused
// with 409 Conflict and tried again.
//
// Sessions implement backends.Dequeuer: Dequeue (a GET and an update)
// takes the session out of a line it no longer waits in, and hands on a
// lock that the line made its own without an Acquire telling it (a
// campaign that stopped waiting, a group's campaign that won another
// slot); the engine calls it for every lock it may be in line for.
// Close leaves every line the session is in (a GET and an update each).
//
// # Fencing
//
// Backend.Fence writes annotations into the lock Lease in one update
// conditioned on the version at which it found the token there: the one
// atomic check-and-write the apiserver offers, as it has no transaction
// across objects. See Fence for protecting other objects with the token.
//
// # Wake-ups
//
// Every Watch of a Backend shares
// one LIST and WATCH of the namespace's Leases with its prefix label; see
// Backend.Watch.
//
// # Permissions
//
// The client's identity needs, in the namespace, this Role (bound to it
// with a RoleBinding); no cluster-wide permission, no patch and no
// deletecollection:
//
//	apiVersion: rbac.authorization.k8s.io/v1
//	kind: Role
//	metadata:
//	  name: hustings
//	  namespace: <namespace>
//	rules:
//	- apiGroups: ["coordination.k8s.io"]
//	  resources: ["leases"]
//	  verbs: ["get", "list", "watch", "create", "update", "delete"]
//
// A request the server forbids returns backends.ErrInvalid (no retry
// cures it), as does a namespace that does not exist.
//
// # What blocks
//
// Every call blocks until the server answers or ctx ends: Open one
// request, KeepAlive two in parallel, Holder one or two, Acquire none to
// four (a read of the lock Lease unless the watch delivered it, a create
// on its first use, a read of its holder's session Lease unless the
// watch delivered it within its TTL, the taking update or, for a
// waiter, the update joining the line: a waiter whose watch sees the
// holder renewing finds the lock held without a request, and a waiter
// named the holder adopts the lock without one), Release one (two for a
// Lease carrying more than the backend's own labels and annotations, or
// changed by a join its session's watch did not deliver, three after a
// fenced write; plus a GET of each waiter's session Lease that the
// watch did not see renewed within its TTL, up to the first live one),
// Dequeue none or two, WatchInLine as Watch, Register one to three,
// Members two, Close one LIST, one write per Lease of the session and a
// GET and a write per line it is in (eight at a time) and one DELETE. Holder, Acquire
// and Members also delete each session Lease they judge expired (one
// more request, once per dead session); an Acquire that loses a race
// reads again, at most five times. A call with a done ctx sends nothing
// and returns an error matching backends.ErrUnavailable and ctx.Err().
// The client's own rate limiter (client-go's default is 5 requests a
// second, burst 10) and the server's API Priority and Fairness queue
// every request, KeepAlive included: give the client a QPS that covers
// the campaigns' acquires, or a KeepAlive may wait behind them.
//
// # Channels and concurrency
//
// Backend and its sessions are safe for concurrent use. No constructor
// starts a goroutine. A KeepAlive that lists the session's locks starts
// one for the LIST and waits for it;
// Close starts up to eight and waits for them; the first Watch, or
// Losses, starts the goroutine that serves every Watch and Losses until
// the last Watch ends and the last listening session is closed.
//
// # What it cannot promise
//
//   - Latency: every write goes through the apiserver to etcd and waits
//     for its commit; a handover (one write, then the watch's delivery)
//     and a renewal are as slow as the slowest of them, and the apiserver's API Priority and Fairness may queue or
//     reject (429) requests under load. A renewal that cannot get through
//     within the TTL loses the session, safely.
//   - Clock rate: expiry is judged on each observer's clock from its own
//     first sight; if an observer's clock runs faster than the holder's
//     by more than the campaign's safety margin over a TTL, it may judge
//     a session expired while the holder still believes it leads. Clock
//     offsets do not matter; rates do.
//   - A request that timed out on the client may still be applied: an
//     Acquire then leaves the lock named for the session (its next
//     Acquire adopts it, Close frees it), a Release frees it.
//   - An operator who deletes a session Lease frees all its locks at
//     once; the holder learns it at its next KeepAlive. Rewriting a lock
//     Lease by hand (kubectl edit) ends the term it records or corrupts
//     it; deleting it ends the term (found by KeepAlive).
//   - client-go's own LeaderElector must not contend for the same Lease:
//     it judges a lock Lease by its own record, which KeepAlive does not
//     renew, and would take it after leaseDurationSeconds. Observers that
//     only read holderIdentity are fine.
//   - Tokens are resourceVersions: restoring etcd from a backup, or
//     migrating the cluster's storage, can make them go back.
//   - A paused process (GC, SIGSTOP) may still act after its session was
//     judged expired; its deadline and the token (Fence) bound the harm.
//   - A waiter whose process died without Close is named like a live
//     one while its session Lease still looks renewed (within its TTL of
//     its last renewal the watch saw, or seen for the first time): the
//     lock is then held by a dead session, and is taken over once that
//     session is judged expired, as after a holder's crash. A line is
//     FIFO among live waiters only: a waiter judged dead by one releaser
//     leaves the line, and joins it again, at its end, at its next
//     Acquire if it still waits.
//   - A lock deleted or rewritten behind its holder's back is pushed
//     (Session.Losses) only while the Backend's watch runs and
//     after the holder's Acquire returned; otherwise the holder's next
//     KeepAlive finds it.
//   - Lock Leases stay, one per name ever used; session Leases of
//     crashed processes stay until some observer judges them expired.
package kubernetes
