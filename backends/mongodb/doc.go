// Package mongodb is a backend of package backends on MongoDB, through
// go.mongodb.org/mongo-driver/v2 and a *mongo.Client the caller connects
// and disconnects: New never dials it, and nothing here disconnects it.
// It is a driver of the shared record core (backends/internal/record),
// which gives the sessions, locks, tokens, watches and the registry their
// contract. It is tested against FerretDB v1.24.2 over SQLite (package
// mongotest), a server that speaks MongoDB's protocol, not against
// MongoDB: see "What the tests prove" below.
//
// # Documents
//
// Four kinds of document, in three collections of one database (names
// begun by WithPrefix, default "hustings_"; EnsureIndexes makes their
// indexes):
//
//   - sessions: one per Open, _id the session's ID, with the candidate,
//     the TTL, and at, the server's clock at its last renewal
//     ($currentDate), and prev, at before that renewal. It lives while
//     at + TTL is ahead of the server's clock, read from hello's
//     localTime, unless its last renewal landed a TTL or more after the
//     one before: a write the server applied after the session had
//     expired, long after its client gave up on it (FerretDB queues writes
//     behind SQLite's lock), must not bring it back, and no one may be
//     left to mark it dead. Nothing else judges it.
//   - locks, a root per lock name (_id "<name>#root"), made on its first
//     use and kept: the lock's epoch.
//   - locks, the lock's state: a document keyed by name and version
//     (_id "<name>#<version, 16 hex digits>"), naming the holding session
//     and candidate, the token, a lease or a hold's end (on the server's
//     clock), or no session for a free lock. The state is the document of
//     the highest version of the name in the root's epoch or a later one;
//     the last two are kept (three while a write is half done).
//   - members: a registry entry per group and order (_id
//     "<group>#<order>"), naming its session; listed while the session
//     lives.
//
// # Compare-and-swap
//
// FerretDB's findOneAndUpdate and updateOne read a document and then
// write it back by _id, so that two clients swapping one version at once
// both win (FerretDB issue 2168; mongotest holds it to the server). What
// it does make atomic, as MongoDB does, is an insert on a unique _id: one
// winner, the others get E11000. Every lock write is built on that alone,
// so that one path is correct on both servers and proved by the tests
// here (TestChainIsAtomic races eight clients; TestStaleWriterLoses): a
// write over version v inserts the state at v+1 (a duplicate key:
// another writer's is there, the core reads again), then, at once,
// deletes the state at v (cleanup) and looks for a state above v+1. A
// key is freed only by the writer of the state after it, which it
// inserted first, and the highest state is never deleted: a writer that
// read v long ago, whose insert met a key freed since by the chain's
// progress, finds a state above its own, deletes its insert, and loses.
// The cleanup deletes the state at v-1, not v: a write that loses takes
// nothing from the chain. A lock's first state is inserted with its root;
// a release is a free state; a take's token is its version. Versions are
// the epoch times 2^32 plus the count of writes in it.
//
// To free a lock by hand, delete its documents but its root:
// {name: <name>, root: {$ne: true}} (Locks returns the collection). The
// next take restarts the lock in the next epoch, so that the tokens still
// increase, and a writer that read the lock before the delete loses or
// takes it as freed, never beside the restart's taker. A restart is made
// by one process at a time, the inserter of the lock's mark (_id
// "<name>#restart"): it reads the lock's documents, moves the root to the
// next epoch and inserts the free state that begins it if no state is
// there, and deletes the mark. Every write reads the mark and the root
// after its insert and loses if there is a mark, or if the root is in a
// later epoch than its own: as the restarter reads after its insert, one
// of the two sees the other's (the race this closes: two restarts, one
// epoch apart, each taken). A mark left by a restarter that crashed or
// lost the server midway holds that lock's restarts and writes for up to
// a minute (restartStale), then the next restarter deletes it.
// Deleting a root too, with its states, lets that name's versions, and
// its tokens, start again; never delete a root alone (a lock with no root
// is read as free).
//
// # Costs
//
// Open is one findOneAndUpdate. KeepAlive is one round trip: the
// renewal (findOneAndUpdate conditioned on the time the last one wrote)
// beside one find of the held locks' documents by name. Acquire reads,
// at once, the server's clock, the session, the lock's root and the
// states at the version this Backend last saw of the lock and the one
// after (and the holder's session if another holds it): reads by _id,
// the only reads FerretDB does not answer by reading the whole collection
// (the lock's documents are read by name only when the versions seen are
// gone). A first take of a name is then one insert of its root and state;
// a later take an insert, then at once a delete, a find by name and two
// reads by _id (the root and the restart mark). Release is
// the same write; Close the same per lock held, all at once, beside the
// deletes of the session and its registry entries. A Backend has at most
// 16 lock reads and writes in flight, 4 of them writes (FerretDB's SQLite
// writes one at a time behind a busy wait, and loses its throughput to many
// writers); the renewals are not held back by them.
//
// The renewal's find by name is answered from the name index on MongoDB
// (EnsureIndexes); FerretDB over SQLite reads the whole collection for
// it, a cost that grows with the locks held (on loopback about 0.2 ms a
// lock: 0.6 s for 3,000), so a session holding thousands of locks there
// needs a TTL whose renewal slack covers it.
//
// # Fencing
//
// A token is the version of the take's state: strictly increasing per
// lock name across holders, restarts and operators' deletes (not across
// names). Fence reports whether a lock is held under a token now;
// FencedUpdate runs the caller's updateOne with a condition that the
// document's FenceField is not above the token, raising it to the token:
// a write under an older token than the last that wrote the document
// matches nothing. FenceFilter and FenceUpdate are that condition and
// that change, for an update of the caller's own.
//
// # Watching
//
// Watch reads every watched lock at the pace WithPoll sets (default 1s),
// and when a lock expires as last seen; every watch of a Backend shares
// one goroutine, and releases made through the same Backend wake its
// watchers at once. Change streams are not used: they need a replica set,
// FerretDB has none, and a session's expiry is no write a stream would
// report; a waiter in another process sees a release within one poll.
//
// # What the tests prove
//
// The backend uses these MongoDB features: inserts (one and many,
// ordered) and deletes by _id, find with $in, $ne, $gt and sort,
// findOneAndUpdate with $currentDate, $setOnInsert and upsert, updateOne
// with $set, $unset and $max, countDocuments, the hello command's
// localTime, createIndexes, and a TTL index. FerretDB v1.24.2 implements
// all of them but the TTL index (createIndexes answers NotImplemented;
// EnsureIndexes then goes on, and Close deletes the documents of
// sessions renewed more than MaxTTL and a day ago). It has no change
// streams and no update pipelines ($$NOW), which the backend does not
// use. FerretDB's updates are not atomic, so FencedUpdate's condition and
// change are two steps there (a write under an older token racing one
// under a newer can land after it), one on MongoDB; the lock writes do
// not rely on any update but the root's epoch, written only by the
// holder of a restart's mark. A TTL index's sweep, replica sets, elections and write
// concerns were not tested. The storm test's 500 first takes on one
// session at once settle in about 3.5 s beside two CPU burners.
//
// # What it cannot promise
//
// Replication: a lock written to a primary that fails before a majority
// has it may be granted again by the next; use a write concern of
// "majority" (the client's, or the URI's w=majority) and read concern
// "majority" for the reads. Pauses: a holder paused past its TTL loses
// the lock to another; only the fencing token protects the resource
// from its late writes. Clocks: expiry is judged on the server's clock
// alone (at, and hello's localTime); a server clock stepped forward ends
// sessions early, one stepped back extends them; on a replica set the
// members' clocks should agree. A lock deleted by an operator is noticed
// by the holder's next KeepAlive, not pushed (Session.Losses is nil). A lock's
// root stays, one small document per name ever used; a writer that
// crashed between a stale insert and its removal leaves a stray state
// document below the chain, which nothing reads. On FerretDB, every
// query but one by _id alone reads the whole collection (it pushes no
// other filter down to SQLite): reads slow down with the number of lock
// names.
//
// A Backend is safe for concurrent use; so are its sessions. Watch
// channels are closed by the Backend (see Watch).
package mongodb
