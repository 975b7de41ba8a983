// Package backends defines the small interface every lock store implements,
// and the errors they all return.
//
// A candidate opens one Session per backend. Every lock it acquires lives
// only as long as that session: one KeepAlive round trip keeps all of them
// alive, and losing the session loses all of them at once. Each lock has a
// fencing token that strictly increases per name over the lifetime of the
// backend's data.
//
// Every backend also wakes waiters (Backend.Watch), lists its locks for
// operators (Backend.List) and keeps the candidate registry that group
// strategies rank (Backend.Members, Session.Register). Three powers only
// some backends have are separate interfaces, discovered with a type
// assertion: ReleaseWatcher wakes waiters on releases alone, so that a
// lock taken wakes nobody; Dequeuer lets a session that queues waiters
// leave a line; LineWatcher lets a session join a line only when it
// waits. backendtest checks each power where a backend has it.
//
// The contract every implementation must keep is checked by the suite in
// backends/backendtest; the embedded default is backends/memory.
//
// What is not guaranteed: a backend cannot stop a paused process from
// believing it still holds a lock. Callers bound their belief with a local
// deadline (see package campaign) and protect resources with the token.
package backends
