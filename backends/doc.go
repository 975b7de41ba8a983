// Package backends defines the small interface every lock store implements,
// and the errors they all return.
//
// A candidate opens one Session per backend. Every lock it acquires lives
// only as long as that session: one KeepAlive round trip keeps all of them
// alive, and losing the session loses all of them at once. Each lock has a
// fencing token that strictly increases per name over the lifetime of the
// backend's data.
//
// Optional powers are separate interfaces discovered with a type assertion:
// Watcher lets waiting candidates and observers be woken by the backend
// instead of polling; ReleaseWatcher wakes them on releases alone, so that
// a lock taken wakes nobody; LossNotifier lets a session report a lock deleted
// behind its back within milliseconds; Dequeuer lets a session that
// queues waiters leave a line; Registry and Registrar keep the candidate
// registry that group strategies rank. backendtest checks each power
// where a backend has it.
//
// The contract every implementation must keep is checked by the suite in
// backends/backendtest; the embedded default is backends/memory.
//
// What is not guaranteed: a backend cannot stop a paused process from
// believing it still holds a lock. Callers bound their belief with a local
// deadline (see package campaign) and protect resources with the token.
package backends
