// Package crleader elects a controller-runtime manager's leader on any
// Hustings backend (Redis, etcd, ZooKeeper, PostgreSQL, Kubernetes Leases,
// memory), and runs work only while a term is in force, with the term's
// fencing token in the work's context.
//
// The package is named crleader, not after its directory: the root package
// of sigs.k8s.io/controller-runtime is itself named controllerruntime, and
// the two are imported side by side. It is a module of its own so that
// the library's users never download controller-runtime.
//
// # Lock: the manager's leader election
//
// Lock is a resourcelock.Interface kept by a campaign.Campaign; Lock.Options
// sets a manager's leader-election options to use it:
//
//	lock, err := crleader.NewLock(backend, "my-operator", 15*time.Second, campaign.WithID(pod))
//	defer lock.Close()
//	mgr, err := manager.New(cfg, lock.Options(manager.Options{Scheme: scheme}))
//
// client-go's LeaderElector still runs its loop and timers on top, calling
// Get and Update; the campaign decides. Get blocks until the campaign is
// elected (so a graceful handover reaches the next manager as fast as the
// backend wakes its campaign), and Update grants client-go a renewal only
// while the campaign's term is in force with its local deadline far enough
// away. client-go goes on leading for at most RenewDeadline + RetryPeriod
// after its last granted renewal, and Options sets those timers from the
// TTL (a fifth and a tenth of it), so that Update stops granting while the
// deadline is further away than that and a tenth of the TTL more (0.42
// TTL; renewals every third of the TTL leave at least 0.57). Hence: when
// the backend cannot be reached, the manager's leader election is lost,
// and its leader runnables are cancelled, before the term's local
// deadline, which comes before any other candidate can be elected. The
// price: the manager loses its leadership when the backend has been out
// of reach for about half the TTL, where a campaign alone would last 0.9.
//
// Once the term client-go was granted has ended, for whatever reason, the
// context of every runnable of the manager (controllers included: Options
// sets BaseContext) is cancelled at once, with the cause ErrTermEnded, and
// every Get and Update fails (ErrTermEnded): client-go's renewal fails,
// and the manager's Start returns an error ("leader election lost", or
// that of a runnable the cancellation made fail), as it always does on a
// loss; the process should exit, as with client-go's own locks.
// The lock does not campaign again. On a graceful stop the manager stops
// its leader runnables, then client-go releases the lock (Options sets
// LeaderElectionReleaseOnCancel) and Update releases it on the backend: the
// next manager leads within the backend's wake-up time. Close, called when
// Start returned, releases it too; called while the manager still leads,
// it waits until client-go can no longer believe it leads.
//
// # Runnable: work bound to a term
//
// WhileLeader(c, fn) runs fn on a campaign of its own, elected apart from
// the manager (one lock per shard, say), with campaign.WhileLeader's
// guarantees. Lock.WhileLeader(fn) runs fn while the manager leads on the
// lock. In both, fn's context ends the moment the term ends, and Term(ctx)
// returns the term's Elected event: its Token fences fn's writes (package
// fence, a backend's native fence), which is what controller-runtime's own
// leader election cannot give (kubernetes-sigs/controller-runtime#1132).
//
// # What it cannot promise
//
//   - A cancelled context stops only code that looks at it: a reconcile
//     that has already sent its write, or ignores its context, finishes it
//     after the term ended, and a lock taken from under the term (an
//     operator deleted it, the backend evicted it) may already be someone
//     else's. client-go itself believes it leads until it reports the loss,
//     within RenewDeadline + RetryPeriod of its last granted renewal. Work
//     that must never overlap fences its writes with the token: run it in
//     a Runnable, whose context carries it.
//   - A paused process (GC, SIGSTOP) acts on a stale belief when it wakes:
//     only the token, checked where the write lands, stops it.
//   - Options must set the manager's timers: Update refuses a renewal under
//     a longer RenewDeadline than the lock's (campaign.ErrInvalid), but a
//     longer RetryPeriod it cannot see.
//   - The manager's own LeaseDuration is not the lease: the backend's TTL
//     is. Handover after a crash takes the backend's expiry (about the TTL)
//     plus the campaign's retry, as for any campaign.
//   - RecordEvent records nothing; the campaign's logger and metrics do.
//     client-go still sets leader_election_master_status{name} (name: the
//     LeaderElectionID, the lock name by default) in controller-runtime's
//     metrics registry: do not register ops.MasterStatus there too.
//
// # Concurrency and goroutines
//
// Lock and Runnable are safe for concurrent use. NewLock starts nothing;
// the first Get starts the campaign's goroutine, which Close (or
// client-go's release) ends and waits for. Get blocks, Update never makes
// a backend call.
package crleader
