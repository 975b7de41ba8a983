// Package redis keeps Hustings locks in Redis (standalone, or Cluster by
// design), through a go-redis client that the caller makes, configures and
// closes.
//
// # Sessions
//
// Every Open makes a session key, prefix:session:<random>:<candidate ID>,
// with SET NX PX ttl. KeepAlive renews it with PEXPIRE; PEXPIRE never
// creates a key, so a session that expired (or was lost with the server's
// data) stays lost, and its KeepAlive returns backends.ErrSessionLost.
// Session IDs are random and never reused.
//
// Renewing the session key proves nothing about the lock keys: one can be
// deleted (DEL by an operator, FLUSHDB) or evicted (maxmemory with an
// allkeys-* policy) while the session lives. So KeepAlive also confirms
// every lock Acquire granted the session and it has not released since,
// in the same pipeline as the PEXPIRE: one round trip whatever their
// number. Through a *goredis.Client (one server: standalone, or the
// primary a Sentinel names) that is one EVALSHA of a script that reads
// the lock keys with one MGET per 1,000 and returns those not holding the
// value they were granted; through any other client (ClusterClient, Ring,
// a wrapper) it is one GET per lock (see Redis Cluster). A lock found
// gone, or held under another token or by another session, is reported by
// Lost until the session acquires or releases it again; KeepAlive still
// returns nil, since the session was renewed. A lock whose lease ran out
// is reported the same way. A bare deletion publishes nothing: it is
// noticed at the next KeepAlive, within one keep-alive interval. A take
// of the lock by another candidate after it does publish (the acquire
// script sends the taker's token on the lock's channel), and a session
// whose Losses was called (the campaigns' sessions are) follows the
// channel of every lock it holds on the Backend's one pub/sub
// connection: the take-over goes to Lost within a message's delivery, so
// the old leader's term ends within milliseconds (see Session.Losses,
// and the cost in docs/performance.md). KeepAlive without
// locks is the PEXPIRE alone. The confirmation costs the server about a
// microsecond per lock (10,000 locks: 7 ms measured on loopback, for a
// request of 0.5 MB), during which a single server runs nothing else.
//
// # Locks
//
// A lock is the key prefix:{name}:lock holding "<token> s <session ID>".
// Acquire, Release and the take-over are Lua scripts (EVALSHA, EVAL when
// the script is not cached), so each is atomic. A lock whose session key is
// gone counts as free: Holder reports it free, and Acquire takes it over:
// on a single server the acquire script reads the holder's session key
// itself; through a Cluster, a compare-and-set on that exact holder value
// follows an EXISTS of the holder's session key. A lease > 0 sets PX lease on the lock key too. A
// Release with a hold rewrites the key to "<token> h <session ID>" with PX
// hold: held by nobody alive, still reporting the candidate and token,
// outliving the session. Close deletes the session key and releases every
// lock the session may hold, in one pipeline. The key of a lock whose
// holder crashed stays until another session takes the lock over.
//
// On a single server the acquire and release scripts read the caller's
// session key first: one command a call. If it is gone, the call reports
// backends.ErrSessionLost (and backends.ErrNotHeld for Release); the
// acquire script then changes nothing, and the release script frees the
// lock without leaving a hold. Through a Cluster, where a script may not
// read a key of another slot, Acquire and Release send their script and
// an EXISTS of the caller's session key in one pipeline, and undo what the
// script did if the key is gone.
//
// # Fencing
//
// The acquire script makes the token max(the counter prefix:{name}:fence
// + 1, the server's TIME in microseconds) and stores it back in the
// counter (scripts may call TIME: Redis 5 and later replicate their
// effects).
// Tokens therefore strictly increase per name for as long as Redis keeps
// its data. They also keep increasing across a loss of that data (a
// restart without persistence, a failover to a replica that missed the
// last writes), when the counter starts again from nothing, provided the
// server's clock does not go backwards: a token runs ahead of the clock
// only when a name is taken more than once in a microsecond, and then by
// as many microseconds as extra takes, while a restart or failover takes
// milliseconds at least. A new server whose clock is behind the old one's
// by more than the outage lasted can issue a token lower than one issued
// before. The fence keys are never deleted: one small key per name.
//
// Backend.Fence fences a write at the resource when the resource
// is this Redis: it runs the caller's Lua script only if the lock key
// still holds the caller's token for a session, checked in the same
// script run, so a stale leader's script (its term ended by a release, a
// take-over or a deleted lock) does not run, and an admitted one comes
// before the next term begins. Its keys must share the lock's hash slot
// (HashTag). It cannot promise more than the lock key does: it does not
// read the holder's session key (another slot), so a leader whose session
// expired passes until another candidate takes the lock over; a failover
// that loses the lock key, or the keys written, loses them for the fence
// too; and Redis does not roll back a script that fails halfway. Writes
// to other stores need their own check of the token.
//
// # Wake-ups
//
// The scripts PUBLISH to prefix:{name}:released when a lock is taken,
// released (with or without a hold), freed by Close or taken over. Watch
// is a go-redis PubSub subscription to that
// channel. A try that finds the lock held also sets prefix:{name}:wanted
// (PX 10 minutes); a release deletes it and, if it was there, PUBLISHes
// to prefix:{name}:wake as well, which is what WatchReleases subscribes
// to (the engine's waiting runs use it where a backend has it): waiting candidates are woken by
// releases alone, and a holder that releases and takes the lock back in a
// loop while nobody tries costs no subscriber a message. Every watch of a
// Backend shares one connection, which stays open, and a channel
// subscribed, for 200 ms after the last watch of it ended. The expiry of a session or a lease publishes nothing: waiters
// must also poll, and their poll interval bounds how late they notice a
// crashed holder.
//
// # Registry
//
// A group's entries are one hash,
// prefix:{group}:members, with a field per session (its session ID)
// holding "<order> <JSON of score, weight and metadata>"; the candidate ID
// is the session's. Register is a Lua script that keeps the order already
// in the session's field, or else takes the next value of the counter
// prefix:{group}:order (INCR in the same slot) before writing the field.
// The counter is never deleted, so orders strictly increase per group for
// as long as Redis keeps its data; a session that deregisters and
// registers again gets a new order. Register sends the script and an EXISTS
// of the session key in one pipeline, as Acquire does: if the session key
// is gone, it deletes the field again and reports
// backends.ErrSessionLost.
//
// Entries die with their session without anything to expire them: Members
// reads the hash (HGETALL), checks every entry's session key with one
// pipeline of EXISTS, and lists only those whose key exists, in order. It
// deletes the fields of sessions found gone as it goes, which is safe
// because a session key is never recreated. So an entry stops being listed
// the moment Redis expires its session key (on the first access after the
// TTL), or loses it. Close deletes the session's fields in its pipeline,
// and Deregister is one HDEL. Registering one name as a group and as a lock
// is fine: the keys differ by their suffix.
//
// # Redis Cluster
//
// The keys of one lock share the hash tag {name}, and those of one group
// the tag {group} ('%' and '}' in a name are escaped as %25 and %7D), and
// through a ClusterClient no script touches a session key, which lives in
// a slot of its own; the session checks are separate commands. The one script over the keys of
// many locks, KeepAlive's confirmation, runs only through a
// *goredis.Client, which New takes to be one server; through any other
// client KeepAlive sends one GET per lock instead, which the client's
// pipeline splits by node: one round trip to each node, in parallel, and
// as many commands as locks. Do not give New a *goredis.Client connected
// to a node of a Cluster (it would not follow MOVED anyway). The tests
// run the contract suite through a ClusterClient against a Cluster of one
// node, which refuses keys of several slots in a command or script as any
// Cluster does; no test runs a Cluster of several nodes, or a failover.
//
// # What blocks
//
// Every call blocks until Redis answers or the context ends. Open,
// KeepAlive, Release, Close, Register, Deregister and Fence make one
// round trip
// (Register one more to undo the work of a session found lost; any script
// one more the first time a server runs it, to send its source); Members
// two, and a third to delete dead entries; Holder one or two;
// Acquire one on a single server; through a Cluster one for a free lock
// or its own, two for a lock held by another, three to take a lock over
// (and one more to undo the work of a session found lost). Local checks come first and never block: a call of a closed
// session returns backends.ErrSessionClosed, bad input
// backends.ErrInvalid. Then a done context returns an error matching
// backends.ErrUnavailable and the context's error without sending
// anything. Failures to reach Redis or to get its answer match
// backends.ErrUnavailable, and the context's error when it ended.
//
// Give the client ContextTimeoutEnabled: true, so that a context's
// deadline bounds the reads and writes of a call; otherwise go-redis bounds
// a call to an unreachable server by its ReadTimeout and WriteTimeout
// only. Either way, a context cancelled without a deadline is seen before
// the call is sent, and after that only when those timeouts end the wait;
// and go-redis retries failed dials and commands (MaxRetries) within these
// bounds, so a call to a server that is down can take seconds.
//
// # Concurrency and ownership
//
// Backend and every session are safe for concurrent use. New does no I/O
// and starts no goroutine; nothing here closes the client. The watches of
// a Backend share one PubSub connection and one goroutine, which exist
// while at least one watch does. The Backend closes a watch channel
// exactly once: when the watch's context ends, or when the shared
// subscription breaks (a connection error, or no answer to a PING within
// 5 s of silence, so within 10 s), which closes every watch's channel.
//
// # What is not guaranteed
//
// Redis replicates to replicas asynchronously, so a failover of the primary
// can lose a lock: a new primary that missed the last writes may hand the
// lock to a second candidate while the first still believes it leads,
// until the first one's next KeepAlive finds its session gone or its local
// deadline passes. A restart without persistence does the same. Fencing
// tokens, which keep increasing across such a loss (see above), are what
// keep the protected resource safe: it must reject a token lower than one
// it has seen. This package does not implement Redlock.
//
// Redis itself may drop a lock key: an eviction under maxmemory with an
// allkeys-* policy, or a DEL by hand. When another candidate takes it,
// its holder hears of the take at once if its loss watch had subscribed
// to the lock's channel (a few milliseconds after the Acquire) and the
// pub/sub connection is up; otherwise, or if the message is lost with a
// broken connection, its next KeepAlive reports it in Lost, and until
// then two leaders believe they lead for up to one keep-alive interval
// (or until the holder's local deadline, if KeepAlive fails), which only
// fencing tokens guard against. Under a volatile-* policy the
// session keys (and the lock keys with a lease) may be evicted, which the
// next KeepAlive reports as backends.ErrSessionLost. Run the Redis that
// holds the locks with maxmemory-policy noeviction.
//
// A Release whose reply is lost and that go-redis retries reports
// backends.ErrNotHeld although the lock was released. A session that
// expires a moment after an Acquire or Release script ran can leave that
// call reporting backends.ErrSessionLost for a change it undid.
package redis
