// Package zookeeper is the ZooKeeper backend: named locks as queues of
// ephemeral sequential nodes, on the caller's go-zookeeper connection.
//
// New takes a *zk.Conn and never closes it. Everything lives under one root
// (WithRoot, default /hustings):
//
//	<root>/sessions/<sid>           one ephemeral node per Session; its mtime is the last renewal
//	<root>/locks/<name>             one container node per lock name
//	<root>/locks/<name>/<sid>-<seq> ephemeral sequential: a session's place in the queue
//	<root>/locks/<name>/hold        persistent, while a release's hold lasts
//	<root>/groups/<group>           one container node per registry group
//	<root>/groups/<group>/<sid>     ephemeral: a session's registry entry
//
// A lock or group name becomes one path segment through url.PathEscape:
// '/', '%', spaces and every non-ASCII byte are written as %XX (and the
// names "." and ".." as %2E), so every valid lock name is
// stored; none is rejected for its characters.
//
// # Sessions
//
// The ZooKeeper session is the conn's; a backends.Session is a logical
// session on it, one per Open, so that many candidates and campaigns can
// share one conn. Each has a node whose mtime, the server's clock, records
// its last renewal. Open makes no request: the session's first call
// creates the node in the transaction of what it writes (an Acquire's lock
// node, a Register's entry, a KeepAlive's renewal), so no node of the
// session exists without it, and a one-shot run (open, acquire, close) is
// two requests. KeepAlive writes it and, in the same transaction (a
// multi), checks that the node of every lock an Acquire granted still
// exists: one request for up to 1,000 locks, one more for each further 1,000
// (a bound well within the server's 1 MB request limit, jute.maxbuffer). A
// multi is all or nothing and names only the first check that failed, so
// each lock node found gone (deleted by an operator) costs one more request;
// such locks are reported by Lost, and the session is renewed all the same.
// Others treat the session's lock nodes as dead once its node is gone or the
// server's clock has passed mtime + TTL, and delete them when they look. The
// session's own calls count the TTL on the local clock from the start of
// Open or of the last successful KeepAlive, which never ends later than the
// server's count, and fail with backends.ErrSessionLost after it. The
// ZooKeeper session backs the TTL during partitions: the server deletes
// every ephemeral node of the conn one session timeout after it last heard
// from it, so Open rejects TTLs longer than the session timeout.
// go-zookeeper does not report the timeout it negotiated: pass the one given
// to zk.Connect with WithSessionTimeout (default 4 s). A new ZooKeeper
// session on the conn (the old one expired) loses every Session opened
// before it. One-shot runs open their session with the run's TTL, so
// campaign.RunIfLeader and Every on ZooKeeper need campaign.WithTTL no
// longer than the session timeout (RunIfLeader's default is 30 s).
//
// # Locks and fencing
//
// The oldest live child of a lock holds it; the fencing token is that
// node's czxid, the zxid of its creation: 64 bits, global, strictly
// increasing, and kept across server restarts with the data. Acquire
// creates the session's node in a transaction that also writes the lock's
// parent, whose stat gives the node's czxid, the server's time and the
// number of children: a free lock costs one round trip. Under contention it
// lists the children and reads the older ones and their sessions, deleting
// the dead. A Backend reads a holder it found alive again only once the
// deadline it read may have passed on the server's clock (a session
// node's mtime only moves forward, so what it remembers ends no later than
// the truth; a session node deleted before its lock nodes, which Close
// does only when its transaction fails, or a lock node made under the
// name of one it read, in a lock's parent the server deleted and made
// again, is seen at that deadline); it finds a holder dead only on fresh
// reads. A
// waiter queued behind another waiter judges the nodes ahead of it at most
// every 50 ms (at each of its polls, not at its first try nor at the try
// right after it set its watch); the waiter next in line judges the holder
// at every try. Without a
// lease a node that does not win stays queued (FIFO, as Curator's
// LeaderLatch), so a waiter becomes the holder when the nodes before it go,
// before it calls Acquire again: Holder reports it then, and its next
// Acquire returns its token. With a lease the node is deleted again and the
// lease counts from the Acquire that wins.
//
// Sessions implement backends.Dequeuer: Dequeue deletes the session's node
// for a name unless an Acquire returned that node's token. A node the queue
// made the holder without an Acquire telling the session is deleted too,
// which frees the lock and wakes the next waiter. Group campaigns call it
// for the slots they did not win, so that no candidate holds two slots.
//
// ZooKeeper expires nodes only with their session (TTL nodes need the
// server's extendedTypesEnabled), so leases and holds are ended lazily,
// with the server's clock: a lock child records its lease, counted from its
// ctime; Release with a hold replaces the node, in one transaction, by the
// hold marker, which records the releasing candidate, its token and the
// hold, counted from the marker's ctime, and outlives the session. Whoever
// looks next (Acquire, Holder) reads the server's clock by writing the
// lock's parent and deletes what has ended, with version checks, so that a
// renewal or a new holder that came first wins. An Acquire that finds the
// holder's deadlines still ahead of a recent sample of that clock (a
// write of this Backend under a second ago, plus the time since, padded)
// writes nothing: the sample can show a holder alive, never one expired.
//
// # Fencing
//
// Backend.Fence fences a write at the resource when the resource
// is this ZooKeeper: it runs the caller's ops in one transaction with a
// check on the node of the caller's term (the lock child whose czxid is
// the token). The next term is granted only once that node is gone:
// Acquire grants a node only when it is the only child (in the
// transaction that creates it) or after deleting every older child and
// an ended hold marker, and Release with a hold deletes the node in the
// transaction that creates the marker. So a transaction that commits
// comes before the next term, and a stale holder's is refused (token 0,
// a lock in a hold, another term's node) or fails its check, applying
// nothing. What it cannot promise: a term whose session TTL or lease ran
// out keeps passing until someone looks and deletes its node, since
// ZooKeeper expires nothing on its own clock but sessions; it fences
// only writes to this ZooKeeper (other stores need their own check of
// the token); and the check names the node by path, which comes back if
// the lock's container node is deleted and the same session takes the
// lock again, so use the fence at once.
//
// # Registry
//
// A session's entry in a group is the node
// <root>/groups/<group>/<sid>, holding the candidate's ID, score, weight and
// metadata as JSON. Its order is the node's czxid, the zxid of its
// creation: global and strictly increasing, so a later registration sorts
// after every earlier one in the group, even after the group's container
// node was deleted and made again. Register creates the node (in a
// transaction that also writes the group's node, whose new stat gives the
// czxid) at the session's first registration and sets its data on updates,
// keeping the order; Deregister deletes it. Entries die with their session
// as locks do: Close deletes them with the session node; an entry whose
// session node is gone, or whose session's TTL has passed on the server's
// clock, is dead, left out by Members, and deleted by the Members call
// that finds it (with the expired session node, unless a renewal came
// first). The server deletes them all when the conn's ZooKeeper session
// ends. Members costs a listing, two reads per entry and one write to read
// the server's clock.
//
// # Wake-ups
//
// A Watch sets one ZooKeeper watch at
// a time: on the predecessor of the oldest node this Backend's sessions have
// queued on the name, else on the holder, the hold marker, or the parent,
// so each waiter is woken by its predecessor only, not by every change. It
// picks that node from the latest listing of the lock's children a call of
// the Backend made (the waiter's own Acquire, usually), so setting a watch
// is one request, as zk's Lock's; after a signal, from the listing of the
// receiver's next Acquire or Holder, or of its own after 20 ms. A watch
// set on the node ahead of one of the Backend's own, found still there,
// answers that node's next Acquire (a waiter's try right after it set
// its watch, lest a release before it be missed) without a request; its
// tries after that look again. So each turn of a candidate in a loop of
// contended runs is five requests, two of them writes, as with zk's Lock:
// its node, a listing, the watch, a listing once woken, the release. A
// release, a Close, or the server expiring a ZooKeeper session deletes the
// watched node and wakes the waiter at once. A hold ending, a lease ending
// or a session's TTL running out changes no node until someone looks:
// waiters must also poll (campaigns do, every retry interval).
//
// # What blocks
//
// go-zookeeper takes no context. Every call checks its context and the
// conn's state first: with a done context, or while the conn has no
// session (not yet connected: wait for zk.StateHasSession; disconnected,
// reconnecting, expired, closed), it fails at once
// with an error matching backends.ErrUnavailable (and the context's error),
// so a disconnected candidate's KeepAlive fails instead of succeeding from
// stale state ("disconnected counts as suspended") and its campaign's
// deadline runs out on time. A request already in flight when the link
// goes silent returns when go-zookeeper gives up on the connection, two
// thirds of the session timeout after it last heard from the server; the
// call then returns ErrUnavailable, wrapping the context's error if it
// ended meanwhile. A call makes one request, or a few under contention
// (KeepAlive: one per 1,000 locks held, and one per lock found gone;
// Fence: two reads and the transaction);
// none starts a goroutine, and none retries on its own.
//
// A closed conn cannot be told from a disconnected one (go-zookeeper does
// not say), so calls on it fail with ErrUnavailable, not ErrInvalid, and a
// campaign on it retries as through an outage, logging each failure. (The
// Redis and etcd backends report a closed client as ErrInvalid, and a
// campaign's Run then returns.)
//
// # Concurrency and channels
//
// Backend and every Session are safe for concurrent use. A Session runs
// one Acquire, Release or Dequeue per lock name, and one Register or
// Deregister per group, at a time; calls for different names run in
// parallel. Each Watch starts one goroutine, which owns the returned
// channel and closes it when the watch's context ends (once a request in
// flight returns) or the watch breaks: the ZooKeeper session expired, the
// conn closed, or a new watch could not be set. A watch whose node never
// changes stays registered in go-zookeeper until the conn closes (it cannot
// remove watches).
//
// # What is not guaranteed
//
// The backend cannot stop a paused process from believing it holds a lock
// after its TTL or lease: protect resources with the token. Expiry is judged
// on the server's clock, the holder's own deadline on its local clock: a
// server clock that jumps forward ends sessions, leases and holds early. A
// lock whose holder's process lives on but stops renewing is freed only when
// someone looks after its TTL, not by an event. A lock node deleted behind
// its holder's back is noticed at the holder's next KeepAlive (or Acquire);
// it is pushed only once the session's Losses was called (campaigns do),
// by an exists watch on each held node, set 5 ms after the grant (a lock
// released by then gets none). A Close that cannot reach the
// server leaves the session's nodes behind: its lock nodes and registry
// entries are deleted by whoever finds them expired, its session node (if
// nothing leads to it) stays until the conn's ZooKeeper session ends. Each
// lock name and group keeps a small container node, which the server deletes
// some time (60 s by default) after its last child.
package zookeeper
