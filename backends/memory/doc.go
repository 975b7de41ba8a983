// Package memory is the embedded, in-process lock store: the default
// backend, and the one the tests and the demo run against.
//
// One Backend is shared by every candidate of one process; it is for one
// process only and keeps nothing on disk, so its locks, sessions and
// fencing counters end with it.
//
// # Guarantees
//
// Every Open makes a distinct session: two sessions opened with the same
// candidate ID are two holders. A session lives TTL after Open or after its
// last successful KeepAlive; a lock lives while its session does, and no
// longer than its lease, if it has one. A lock released with a hold stays
// held by nobody alive until the hold ends, even if its session closes.
// Fencing tokens strictly increase for the life of the Backend, per name
// and across names (one counter), as etcd's and ZooKeeper's do.
// Time is read from the Clock (see WithClock) at each call.
//
// # What blocks
//
// Nothing, unless a call is partitioned (see Backend.Partition and
// Backend.PartitionAll): then it blocks until its context ends or the
// partition heals. Local checks come first and never block: a call of a
// closed session returns backends.ErrSessionClosed, bad input returns
// backends.ErrInvalid. Then every call, Close included, checks its context
// and, if it is done, returns an error matching backends.ErrUnavailable and
// the context's error, without reaching the backend. A Close that does not
// reach the backend marks the session closed but leaves its locks to
// expire with the TTL, as a real server would.
//
// # Errors
//
// Acquire and KeepAlive of an expired session return an error matching
// backends.ErrSessionLost; Release then returns one matching both
// backends.ErrNotHeld and backends.ErrSessionLost. Close of an expired
// session returns nil.
//
// # Watching
//
// A watch channel receives a value
// (coalesced, buffer of one) when a lock is acquired or released, when its
// session closes, or when a KeepAlive or any other call finds that it
// expired. The Backend closes the channel when the watch's context ends.
// No goroutine runs in the background: expiry is computed lazily from the
// clock on each call, so the crash of a holder (its session simply stops
// being renewed) is not signalled when it happens. Waiters must also poll,
// at an interval that bounds how late they notice a crashed holder.
//
// # Concurrency
//
// Backend and every Session are safe for concurrent use. No constructor
// or method starts a goroutine; a watch's context.AfterFunc runs briefly
// when its context ends.
package memory
