// Package hub multiplexes the watches of one backend over one feed: a
// pub/sub connection, a LISTEN connection, a watch stream. A backend
// keeps only its transport, which turns what the feed carries into "name
// changed" (Signal) and, by returning, "feed broken"; the Hub keeps the
// watches: per-name subscriber sets, one run of the feed (and one
// goroutine) while watches exist, channels of buffer one that coalesce,
// all closed when the feed breaks.
//
// # Runs
//
// The first Watch (or Keep) starts a run: the Hub calls Config.Open with
// its lock held, then runs the function Open returned in a goroutine of
// its own. That function confirms the feed with Run.Ready, reports what
// it sees, and returns when the run's context ends (the Hub ended the
// run: its last watch ended) or when the feed breaks. A feed that breaks
// ends every watch of the run: their channels are closed, and their
// owners watch again (and poll meanwhile). The next Watch starts a new
// run. Every method a transport calls takes its Run, and does nothing if
// that run is no longer the Hub's: a run being stopped may still be
// delivering while the next one starts. A transport that finds its feed
// broken before its function can return ends the run at once with
// Hub.Break; Run.Done tells when the function has returned, for a
// caller that must outlive the feed. A feed whose versions are one
// sequence reports its progress (Run.Advance), which a caller waits for
// (Run.Reached) to know that every change up to a write was delivered.
//
// # Kinds of signal
//
// A watch made with WatchOnly wakes only for the signals of the kinds it
// asked for (View.SignalKinds): a waiter that cares only for a lock's
// release, beside watches that want every change of it.
//
// # Per-name state
//
// A Hub[S] keeps an S per watched name, from the name's first watch until
// its last ends (or it has lingered, see Config.Linger). A transport
// reads and changes it under the Hub's lock through With's View; Next and
// Due schedule re-reads from it (Config.Due).
//
// # Concurrency
//
// A Hub is safe for concurrent use; its zero value is not usable (New).
// Config's functions, and the function given to With, run with the Hub's
// lock held: they must not block, and must not call the Hub. A transport
// that keeps fields of its own under the Hub's lock reads and writes them
// only there. A Sub's channel is closed by the Hub, exactly once, when
// the Sub ends (End, its ctx, or a broken feed).
//
// What it does not promise: a signal says only that the name may have
// changed; a broken feed loses the signals of its last moments, which is
// why every channel is closed then.
package hub
