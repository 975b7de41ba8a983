// Package redis keeps Hustings locks in Redis (standalone, or Cluster by
// design), through a go-redis client that the caller makes, configures and
// closes.
//
// # Sessions
//
// Every Open makes a session key, prefix:session:<random>:<candidate ID>,
// with SET NX PX ttl. KeepAlive is one PEXPIRE of that key however many
// locks the session holds; PEXPIRE never creates a key, so a session that
// expired (or was lost with the server's data) stays lost, and its
// KeepAlive returns backends.ErrSessionLost. Session IDs are random and
// never reused.
//
// # Locks
//
// A lock is the key prefix:{name}:lock holding "<token> s <session ID>".
// Acquire, Release and the take-over are Lua scripts (EVALSHA, EVAL when
// the script is not cached), so each is atomic. A lock whose session key is
// gone counts as free: Holder reports it free, and Acquire takes it over
// with a compare-and-set on that exact holder value after an EXISTS of the
// holder's session key. A lease > 0 sets PX lease on the lock key too. A
// Release with a hold rewrites the key to "<token> h <session ID>" with PX
// hold: held by nobody alive, still reporting the candidate and token,
// outliving the session. Close deletes the session key and releases every
// lock the session may hold, in one pipeline.
//
// Acquire and Release send their script and an EXISTS of the caller's
// session key in one pipeline: one round trip on a standalone server. If
// the session key is gone, the call reports backends.ErrSessionLost (and
// backends.ErrNotHeld for Release) and undoes what the script did.
//
// # Fencing
//
// The acquire script increments the counter prefix:{name}:fence and makes
// the token max(counter + 1, the server's TIME in microseconds), storing it
// back. Tokens therefore strictly increase per name for as long as Redis
// keeps its data, and also across a loss of that data (a restart without
// persistence, a failover to a replica that missed the last writes) as
// long as the server's clock does not go backwards and no more than one
// lock of a name was taken per microsecond just before the loss. A
// server whose clock is behind the old one's can issue a token lower than
// a token issued before the loss.
//
// # Wake-ups
//
// The scripts PUBLISH to prefix:{name}:released when a lock is taken,
// released (with or without a hold), freed by Close or taken over. Backend
// implements backends.Watcher with a go-redis PubSub subscription to that
// channel. The expiry of a session or a lease publishes nothing: waiters
// must also poll, and their poll interval bounds how late they notice a
// crashed holder.
//
// # Redis Cluster
//
// The keys of one lock share the hash tag {name} ('%' and '}' in a name
// are escaped as %25 and %7D), and no script touches a session key, which
// lives in a slot of its own; the session checks are separate commands.
// That is what a Cluster needs, but this package is tested only against a
// standalone server.
//
// # What blocks
//
// Every call is one to three round trips and blocks until Redis answers or
// the context ends. Local checks come first and never block: a call of a
// closed session returns backends.ErrSessionClosed, bad input
// backends.ErrInvalid. Then a done context returns an error matching
// backends.ErrUnavailable and the context's error without sending
// anything. Failures to reach Redis or to get its answer match
// backends.ErrUnavailable, and the context's error when it ended. Give the
// client ContextTimeoutEnabled: true: otherwise go-redis bounds a call to
// an unreachable server by its own ReadTimeout and WriteTimeout (and
// retries), not by the context.
//
// # Concurrency and ownership
//
// Backend and every session are safe for concurrent use. New does no I/O
// and starts no goroutine; nothing here closes the client. Each Watch holds
// one PubSub connection and one goroutine until its channel is closed. The
// Backend closes a watch channel exactly once: when the watch's context
// ends, or when the subscription breaks (a connection error, or no answer
// to a PING within 5 s of silence, so within 10 s).
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
// A Release whose reply is lost and that go-redis retries reports
// backends.ErrNotHeld although the lock was released. A session that
// expires a moment after an Acquire or Release script ran can leave that
// call reporting backends.ErrSessionLost for a change it undid.
package redis
