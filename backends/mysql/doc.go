// Package mysql is a backend of package backends on MySQL 8 or MariaDB
// (10.5 and later), through github.com/go-sql-driver/mysql and a *sql.DB
// the caller opens and closes: New never dials it, and nothing here
// closes it. It is a driver of the shared record core
// (backends/internal/record): sessions and locks are rows, changed only
// by conditioned statements.
//
// # Tables
//
// Migrate creates four tables and one procedure (SQL prints them for a
// DBA): sessions (one row per Open, alive while its expires_us is ahead
// of the server's clock), locks (one row per lock, naming its session), members (the
// group registry),
// counter (one row; every lock write takes its next value under its row
// lock, for the token and the row's version), and the renew procedure,
// the keep-alive. Times are the server's clock only: UTC_TIMESTAMP(6) in
// microseconds, which NOW(6)'s session time zone does not move; no
// client's clock is compared with it.
//
// # Costs
//
// Open is one INSERT. KeepAlive is one statement (a CALL of renew: one
// UPDATE of the session row, then a read of the session's lock rows
// through their index) whatever the number of locks; the server's work
// grows with them, the round trips do not. Acquire is one SELECT when the
// lock is held (no write), else a transaction of four round trips
// (BEGIN, the counter, the INSERT or UPDATE, COMMIT). Release and Close
// are one or two statements. Deadlocks (1213) and lock wait timeouts
// (1205) are retried inside, a few times with a jittered pause; they
// never reach the caller unless every try failed (then ErrUnavailable).
//
// # Fencing
//
// Tokens are the counter's values: strictly increasing per database,
// across holders and restarts, in the order the taking writes committed.
// Fence checks a token inside the caller's transaction and locks the lock
// row in share mode until that transaction ends.
//
// # Watching
//
// MySQL cannot notify: Watch reads every watched lock at the pace
// WithPoll sets (default 1s), and also when a lock expires as last seen;
// every watch of a Backend shares one goroutine, and releases made
// through the same Backend wake its watchers at once. A waiter in another
// process sees a graceful release within one poll.
//
// # Why not GET_LOCK
//
// MySQL's GET_LOCK belongs to one connection: a pool that drops or
// replaces that connection (an idle timeout, a broken link, a server
// restart) releases the lock silently, and the holder learns nothing
// (go-sql-driver/mysql #1138; go-mysql-lock #9). It has no fencing token
// either. Rows with an expiry on the server's clock survive the pool.
//
// # What it cannot promise
//
// Asynchronous replication: a lock written on a primary that fails before
// its replica received the row may be granted again by the promoted
// replica; use semi-synchronous replication or Galera, or accept it.
// Pauses: a holder paused past its TTL loses the lock to another; only
// the fencing token (Fence) protects the resource from its late writes.
// Clocks: expiry is judged on the server's clock alone; a server clock
// stepped forward ends sessions early, one stepped back extends them.
// A lock deleted by an operator is noticed by the holder's next
// KeepAlive, not pushed (Session.Losses is nil).
//
// The group registry (Backend.Members) is a members table whose rows
// live with their sessions; its orders come from the same counter.
//
// A Backend is safe for concurrent use; so are its sessions. Watch
// channels are closed by the Backend (see Watch).
package mysql
