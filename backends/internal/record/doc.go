// Package record implements backends.Backend once for every store that
// keeps sessions and locks as records changed by compare-and-swap on a
// version (MySQL/MariaDB, NATS JetStream KV, and the stores after them).
// A store is a Driver: a handful of record operations; the Store built on
// it gives the contract of package backends: sessions with an expiry,
// locks naming their session, fencing tokens, Holder, Release with a
// hold, the KeepAlive that renews a session and confirms its locks in one
// round trip, Lost, and Watch and WatchReleases through one watch hub
// (package hub) per Store.
//
// # Writing a driver
//
// A session is a record with an ID (chosen by the core), a candidate and
// a TTL; it lives TTL after its creation or its last renewal, on the
// store's clock where the store has one (SQL: NOW(6)), else as the store
// expires keys (a per-key TTL). Once expired a session never lives again:
// Renew must not bring it back (a store that keeps a version of the
// record, Session.Version, conditions the renewal on it). The core holds
// to that on its own side too: a session is lost once a TTL has passed,
// on the client's clock, since the start of the call that last wrote its
// record, though the store may keep and renew the record later (Consul
// invalidates a session up to 2×TTL late; a per-key TTL may be swept
// late): its locks are then freed by Close, or when the store ends it. A
// lock is a
// record naming its session; it lives while its session does, unless it
// is a hold (Hold: it lives until Expires, whoever's session it names) or
// has a lease (a non-zero Expires ends it sooner). Every lock write
// carries both Expires (on the clock of the read it follows) and TTL
// (the duration): a store with a clock keeps the first, one that expires
// keys itself the second, and then reports no Expires in its reads.
//
// Renew and DeleteSession are given the locks the core holds for the
// session (name, token, the version their take wrote): a store with an
// index on the session finds them itself; a key-value store reads or
// removes them by name.
//
// Every lock write is conditioned: CreateLock only where no record is,
// SwapLock only over the version read, DeleteLock only of the version
// read; a condition that fails returns ErrConflict and the core reads
// again. A write whose Token is 0 takes the lock: the store gives it a
// fresh token, greater than every token it gave before (a sequence in
// SQL, the write's revision in a KV store), atomically with the write.
//
// The core judges liveness from what ReadLock and Renew report: the
// store's clock at the read (Now), the holder session's state, and the
// caller's own. A store that has no clock reports the client's.
//
// A driver keeps the group registry too (Registrar). A
// driver that can push changes implements Notifier: its feed reports
// every write of a lock record (removals and expiries included) and the
// end of every session record, and the Store's sessions then push
// losses (Session.Losses: a write to a held lock's record after its take,
// or the session's own end, is pushed to Lost). Otherwise the Store
// polls the watched locks at Config.Poll. Either way the hub re-reads a
// watched lock when it expires as last read, if the read reported an
// expiry (a store whose reads report none must push ends). A feed whose
// versions are one sequence over all the store's records (a stream's
// sequence) also reports its progress (Feed.Progress): a pushed session
// whose locks it covered then renews alone, with no lock read, and
// counts them confirmed once the feed delivered the renewal.
//
// Round trips: Open, KeepAlive and Close one driver call each; Acquire a
// ReadLock and, to take, a CreateLock or SwapLock (again after a
// conflict, bounded; a lock lost to every race is ErrHeld); Release of a
// lock granted with no lease and without a hold one DeleteLock beside a
// ReadLock, else a ReadLock then a write; Holder one ReadLock.
//
// Concurrency: a Driver is called from many goroutines at once and must
// be safe for that. Errors a driver returns other than ErrConflict should
// match backends.ErrUnavailable or backends.ErrInvalid; any other error
// is wrapped in backends.ErrUnavailable.
package record
