// Package postgres is a backend on PostgreSQL tables, for services that
// already run PostgreSQL. It takes the caller's *pgxpool.Pool
// (github.com/jackc/pgx/v5) and never closes it.
//
// # Tables
//
// Migrate creates, in a schema of their own (WithSchema, default
// "hustings"), five tables, two sequences and two functions; SQL prints
// the same statements for a DBA to apply by hand. New never creates
// anything; a backend whose tables are missing fails with
// backends.ErrInvalid naming Migrate.
//
//   - sessions: one row per Open, with the session's TTL and expires_at.
//     A session lives while expires_at is after the server's
//     clock_timestamp(); no statement ever extends a session that has
//     expired.
//   - locks (UNLOGGED): one row per lock name, with the holding session,
//     the candidate ID, the fencing token and the lock's own expires_at:
//     the lease's end, or 'infinity' without a lease. A lock is held while
//     its session lives and its own expires_at has not passed, so that a
//     keep-alive writes the session row alone, however many locks the
//     session holds. A lock released with a hold keeps its row, marked
//     hold, held by nobody alive until its own expires_at; a lock released
//     without one keeps it too, free, and so does a lock watched before it
//     was ever held: the row carries watched_until (see "Wake-ups").
//   - epoch (UNLOGGED): one row while the locks table is intact; see
//     "Crashes of the server" below.
//   - holds: a logged copy of every lock released with a hold.
//   - members: the group registry (Backend.Members), live while the
//     entry's session is.
//   - tokens (a bigint sequence, NO CYCLE): every fencing token. Tokens
//     strictly increase per database, across holders, restarts and
//     crashes of the server (see below).
//
// # Why the locks table is UNLOGGED
//
// A one-shot run (campaign.RunIfLeader) is an acquire and a release. With
// a logged locks table each is a commit that waits for its WAL to reach
// the disk: two fsyncs a run, and a NOTIFY holds PostgreSQL's one notify
// lock through its commit, so every notifying commit of the database
// queued behind the fsync of another. An UNLOGGED table writes no WAL,
// and a transaction that wrote none commits without a flush, several
// times faster (docs/performance.md has the figures). What
// the flush bought was that a lock outlived a crash of the server; it
// need not, as long as no one is told he leads while another still
// believes he does, which the epoch row ensures. What must outlive a
// crash is kept logged: sessions (their expiry bounds who may still
// believe), holds (late candidates must still skip a window) and the
// token sequence, moved past its lost values.
//
// Advisory locks, the peer in bench/, write nothing at all, but live on
// one connection: a pool that recycles it, or a transaction pooler such
// as PgBouncer, silently drops them, and they carry no token and no
// expiry. This backend keeps every statement self-contained instead.
//
// # Crashes of the server
//
// A crash (or an immediate shutdown, or a failover to a replica) empties
// the UNLOGGED tables; a clean shutdown keeps them. Sessions survive, and
// their holders may still believe they lead until their next renewal
// reads their locks and finds them gone (Lost), or their deadline. So the
// first acquire that finds the epoch row missing restores it, and from
// then on no lock is taken until every session that was alive then has
// renewed or expired; a session that waits for a lock renews as a
// campaign's does, every third of its TTL, so that is at most a third of
// the TTL after the server is back, or the TTL for a holder that died
// with it. The same restore moves the token sequence to the server's
// clock in microseconds if it is behind it (values taken since its last
// WAL flush may not have survived) and puts the holds still running back
// in the locks table.
//
// # Statements
//
// Every call is one statement, one round trip (but the first acquire
// after a crash of the server, see below). Open inserts the session
// row. Acquire first reads the lock row and its holder's session row: a
// lock another session visibly holds is reported held by that read alone
// (no write, no row lock, no commit waiting for an fsync, no wait behind
// the holder). Otherwise it is one INSERT ... ON CONFLICT (DO NOTHING for
// a missing row, DO UPDATE ... WHERE the row is this session's or no
// longer live), RETURNING the token; to take a lock over, it reads the
// holder's session row FOR SHARE and judges the holder dead on the
// version it locked: a keep-alive of the holder either committed before
// (and is seen) or waits, and then finds its session expired. KeepAlive
// calls the schema's renew_session function, which
// renews the session row and then, in a statement with a snapshot of its
// own (so it sees a lock taken over before it renewed), reads the
// session's live locks: KeepAlive compares them
// with what Acquire granted and reports the others by Lost. Release
// frees the row (or marks it hold); Close deletes the session row and its
// registry entries and frees its lock rows.
// Serialization failures (40001) and deadlocks (40P01) are retried inside
// the backend, up to 5 times with a short jittered pause; users never see
// them. The backend keeps no session-level state (no advisory locks, no
// SET, no temporary tables), so it works through a transaction pooler
// such as PgBouncer in transaction mode, LISTEN excepted (below).
//
// # What a run costs
//
// A one-shot run on a session (campaign.RunIfLeader with WithSession) is
// an Acquire and a Release: two statements, each a transaction that
// writes one UNLOGGED row, so each gets a transaction ID and a commit
// record (in memory: with no other WAL written the commit does not wait
// for a flush). The advisory-lock loop of bench/ sends two statements
// too, but neither writes. A throwaway loop of the least a row-writing
// lock must send per run (an UPDATE of an UNLOGGED row taking a token from
// the sequence, then an UPDATE freeing it, on a pinned connection) ran at
// 0.41-0.51x the advisory loop's runs/s here, at 1 and at 8 goroutines
// (2 cores, shared with other work): a statement that writes costs about
// 45 µs more than one that does not. No design that keeps a token, Holder
// and the server's expiry in a row can reach the advisory loop's rate;
// what is left to save is above that floor:
//
//   - a NOTIFY per statement (another 45 µs here, and at 8 goroutines
//     half the floor's rate, through the notify lock): sent only for
//     watched locks (see "Wake-ups");
//   - the client: expanding the statement's text per call took a quarter
//     of the client's CPU (now done once, in New), and a pool acquire per
//     statement about 15 µs (kept: a pinned connection per session would
//     serialize the session's runs and break behind PgBouncer);
//   - acquireSQL's own work beside the floor's UPDATE: the reads of the
//     epoch and of both sessions, the INSERT ... ON CONFLICT, which the
//     contracts above need (take-over judged on a locked session row,
//     the epoch after a crash).
//
// A logged locks table costs a WAL flush per run instead: the same loop on
// a logged table ran at 0.14-0.22x the advisory loop.
//
// Every expiry is computed by the server, with clock_timestamp(), from
// the server's clock only; the client's clock never reaches a row. The
// local deadlines of package campaign count from the start of the
// client's call, before the server reads its clock, so they end first.
// clock_timestamp(), not now(): now() is the start of the transaction,
// and a statement that waited for a row lock (a keep-alive behind an
// acquire) would judge expiry by a time long past, renewing a session
// that expired meanwhile, after its release had found it expired and left
// its lock (seen in the chaos suite: the session then got the lock back
// under the same token, for a new term).
//
// # Upgrading
//
// Versions before renew_session judged a lock by its row's expires_at
// alone, which their keep_alive function moved on every renewal; this
// version leaves it in place. Such a process beside this one would take a
// live lock one TTL after its acquire. Migrate therefore replaces
// keep_alive with a function that raises an error (SQLSTATE 55000), of
// another return type: an old process's keep-alives fail from then on, so
// its sessions expire and its campaigns step down, and its Migrate fails
// (it cannot CREATE OR REPLACE a function whose return type changed).
// Until its sessions expire, it cannot take a lock of this version either:
// it finds the row's expires_at in the future ('infinity', or the lease's
// end). Do not drop keep_alive by hand. Upgrade every process; a rolling
// upgrade is safe, but the old processes lose their sessions as soon as
// the first new one runs Migrate.
//
// Migrate turns the logged locks table of an earlier version UNLOGGED
// (ALTER TABLE ... SET UNLOGGED: a rewrite under an ACCESS EXCLUSIVE
// lock, once, which every statement on locks waits for), keeping its
// rows and copying its holds. A process of an earlier version knows
// nothing of the epoch: after a crash it may take a lock at once.
// Upgrade every process before the next crash.
//
// Migrate adds the column watched_until to the locks table of an earlier
// version (ALTER TABLE ... ADD COLUMN with a constant default: no
// rewrite, but a moment under an ACCESS EXCLUSIVE lock). Processes of an
// earlier version watch without marking, so the releases of this version
// do not wake their waiters, which then find a released lock by polling
// (their retry interval) until they are upgraded; their releases delete
// rows, which this version marks again (see "Wake-ups").
//
// # Wake-ups
//
// Acquire, Release and Close NOTIFY one channel per schema
// ("hustings.<schema>") in the same statement, if the lock's row is
// watched: the payload is how many milliseconds the lock now lives unless
// renewed (until its session's expiry or its lease's end), and its name.
// A NOTIFY is not free: PostgreSQL queues it whether anyone listens or
// not, and holds its one notify lock, for the whole database cluster,
// from queueing it to the end of the commit, so notifying commits run one
// at a time. So Watch first marks the lock's row watched (watched_until:
// the server's clock + 3 minutes; a row is inserted, free, for a name
// that has none), one statement whose commit precedes the LISTEN, and the
// listening connection marks every row it watches again each minute
// (skipping a row locked by a writer or a fenced transaction: its mark
// outlasts the next try). A statement reads watched_until from the
// version of the row it wrote, after its row lock: a mark committed
// before is seen, and a Watch that marks after the write waited for it,
// so its caller's next Acquire sees the change. A lock nobody watches
// notifies nobody: a loop of runs that nobody waits for sends no
// NOTIFY. A row deleted by hand, emptied by a crash, or released by an
// older version loses its mark; the acquire that inserts the row again
// therefore always NOTIFYs, its payload signed '+', and a listener that
// watches the lock marks the row again (without waiting for a writer of
// the row or a fenced transaction: a locked row is tried again, 10 ms
// later, then less and less often). WatchReleases (the engine's waiting
// runs use it) wakes only for a payload of 0 ms (a release without a hold,
// a Close) and for the listener's timer, not for a take, so that waiters
// are not woken, to find the lock held, at every take. Watch LISTENs on one
// connection per Backend that it dials itself (WithListener; default: the
// pool's configuration), not one from the pool, which every watched lock
// of the Backend shares, as the Redis backend shares one pub/sub
// connection. Nothing notifies an expiry (a crashed holder, a lease), so
// the listener also keeps, per watched lock, a timer set to the expiry it
// last saw; when it fires, it re-reads the rows due and their sessions'
// (one query for all of them), and signals the locks that are free. Behind a transaction pooler,
// give WithListener a configuration that reaches the server directly.
// Every Watch channel is closed by the Backend when its context ends or
// the listening connection breaks.
//
// # Fencing inside the caller's transaction
//
// Backend.Fence(ctx, tx, name, token) checks, inside the caller's own transaction,
// that name is still held under token, and takes its row FOR SHARE: a
// take-over (an UPDATE of that row) waits until the transaction commits or
// rolls back, so the old leader's write lands before the next term begins,
// and a stale leader's Fence fails with backends.ErrNotHeld, from the
// moment its session expired. Keep fenced transactions short: a take-over
// waits for them, and so does a Watch that marks the row (the holder's own
// keep-alive does not).
//
// # Concurrency
//
// A Backend and its sessions are safe for concurrent use. Calls block for
// one round trip (and the retries above), bounded by their context. Watch
// returns once the LISTEN is confirmed; its goroutine lives while at least
// one watch does.
//
// # What it cannot promise
//
//   - A crash of the server ends every term (at each holder's next
//     renewal), and no lock is granted until every session alive then
//     has renewed or expired; see "Crashes of the server".
//   - With asynchronous replication, a failover loses the last commits of
//     the sessions and holds; the replica's locks table starts empty, as
//     after a crash, but a renewal it did not receive may let a lock go
//     before its old holder's deadline. Tokens after the failover follow
//     the replica's clock; fence the resource.
//   - Tokens restored after a crash follow the server's clock: a clock
//     stepped back further than the time since the last restore, or more
//     than a million locks a second on average, could give a token out
//     twice.
//   - A paused process (GC, SIGSTOP) may still believe it leads after its
//     lock expired on the server; its deadline and the token (Fence) bound
//     the harm.
//   - Expiry is the server's clock: a server whose clock jumps ends
//     sessions early or late.
//   - A lock deleted behind its holder's back is found at the holder's
//     next KeepAlive, not pushed (Session.Losses is nil).
//   - Rows of expired sessions are deleted a few at a time by later Opens,
//     and so are the rows of locks released and not watched (a release
//     keeps its row, free, so that a watch's mark stays); a lock whose
//     session row is gone is free, but its row stays. A process that
//     uses many names once, on a session it keeps, grows the locks table
//     between Opens.
//   - A crash of the server takes the watch marks with the locks table:
//     the listening connection breaks with it and every watch is made
//     again, which marks again. Processes of a version before
//     watched_until neither mark nor keep marks (their releases delete
//     the row): during a rolling upgrade their waiters, and the waiters
//     of a lock they released, are woken by their polling, or by the
//     next minute's marks.
//   - Liveness needs a server that answers. Every PostgreSQL backend
//     process calls setsid(); on a Linux host with sched_autogroup_enabled
//     each is then alone in a scheduling group, and beside CPU-bound work
//     in another group they were seen waiting 75–105 ms for a CPU at each
//     wake-up, a SELECT 1 taking up to 2.9 s. Keep-alives then time out
//     (each may take up to the TTL), leaders step down at their deadlines,
//     and no one is elected until the server answers again: safe, but
//     slow. A renewal's commit waits for its WAL flush: a slow disk slows
//     keep-alives (and releases with a hold), not acquires or releases.
package postgres
