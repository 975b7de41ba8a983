// Package campaign runs leader elections on a backend: long-lived
// campaigns that hold a lock and say so on a channel, and one-shot runs
// that skip quietly when another candidate holds the lock.
//
// # Campaign
//
// New validates and starts nothing; Run campaigns until its context ends or
// Close is called, and owns and waits for every goroutine it starts. A
// campaign has no goroutine of its own: it blocks the caller's in Run, and
// a backend call in flight runs in a goroutine of its session's, which has
// at most a bounded number in flight.
//
// A campaign publishes Elected only after the backend confirmed the lock,
// with the term's fencing token and local deadline: the start of the
// session's last successful Open or KeepAlive + TTL − safety margin. At that
// deadline, renewed or not and reachable backend or not, it publishes
// Revoked and cancels the term's context, even if a backend call hangs:
// calls run apart from the campaign's state, and the deadline is a timer
// that no call holds up. Without process pauses, then, two candidates never both believe they
// lead. A paused process (GC, SIGSTOP) can still act on a stale belief after
// its lease ran out; protected resources must check the fencing token.
//
// # Channels
//
// Events returns one receive-only channel per campaign, the same on every
// call, closed by Run when it returns (or by Close if Run never ran). The
// campaign never waits for its reader: a reader that falls behind receives
// the latest state, never a backlog, and Elected for term t is always
// followed by Revoked for term t before any later Elected (see package
// events). Subscribe gives more subscribers channels of their own (one
// goroutine each), closed when their context or the campaign ends.
// Observe's channel is closed when its context ends.
//
// # Work bound to the term
//
// Term returns the context of the term in force and binds the caller's work
// to it; WhileLeader does this for a function run once per term. A graceful
// stop (Resign, Close, the end of Run's context) cancels the term's
// context, publishes Revoked, waits for bound work to return (bounded by the
// grace period and the term's deadline), and only then releases the lock,
// so the next leader does not start while this one is still writing.
//
// # One-shot runs
//
// RunIfLeader acquires once, runs fn, releases, and returns a Result that
// tells Succeeded (fn ran), Skipped (another candidate holds the lock: normal,
// not an error) and ActionFailed (fn returned an error) apart. Every runs
// fn at most once per period window across the candidates.
//
// # When the backend fails
//
// A one-shot run whose backend fails (unreachable, timed out, erroring)
// returns the backend's error; with WithFailOpen it runs fn without the
// lock, token 0. Fail-open is wrong for
// payments, migrations and anything that must run at most once: every
// replica that loses the backend runs it. A lock held by another candidate
// is never a failure, and never runs fn. Each backend call of a one-shot
// run is bounded by its lease.
//
// # Errors
//
// Bad input is rejected with ErrInvalid before anything runs. Backend
// failures are returned wrapped and match the errors of package backends;
// context errors are returned as they are. Revocation reasons are the Err*
// values of package events.
//
// Every method of Campaign is safe for concurrent use.
package campaign
