package backends

import (
	"context"
	"errors"
	"time"

	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/strategy"
)

// Errors returned by every backend, possibly wrapped with details; match
// them with errors.Is. Backends translate their drivers' errors into these.
var (
	// ErrHeld: another candidate holds the lock. This is contention, not a
	// failure of the backend.
	ErrHeld = errors.New("backends: held by another candidate")
	// ErrNotHeld: the caller does not hold the lock (it never did, it was
	// released, or it was lost).
	ErrNotHeld = errors.New("backends: not held")
	// ErrSessionLost: the backend no longer knows the session (it expired),
	// so every lock of it is gone.
	ErrSessionLost = errors.New("backends: session lost")
	// ErrSessionClosed: the session was closed by its owner and cannot be
	// used again.
	ErrSessionClosed = errors.New("backends: session closed")
	// ErrUnavailable: the backend could not be reached or failed to answer.
	ErrUnavailable = errors.New("backends: unavailable")
	// ErrInvalid: bad input, such as an empty lock name or a TTL ≤ 0.
	ErrInvalid = errors.New("backends: invalid argument")
)

// Backend is a store of named locks. Implementations are safe for
// concurrent use by many candidates.
type Backend interface {
	// Open starts a session for candidate id: its liveness on the backend.
	// The session lives ttl after the start of Open or of its last
	// successful KeepAlive, whichever is later. ttl must be > 0.
	Open(ctx context.Context, id string, ttl time.Duration) (Session, error)
	// Holder reports who holds the lock name. A zero Holder (empty ID)
	// means the lock is free.
	Holder(ctx context.Context, name string) (Holder, error)
	// Watch returns a channel that receives a value whenever the holder of
	// name may have changed after Watch returned, so that waiting
	// candidates and observers are woken instead of polling. Signals
	// coalesce (the buffer holds one), so the receiver re-reads the state
	// it cares about. The backend closes the channel when ctx ends or the
	// watch breaks; the receiver should then fall back to polling or
	// watch again.
	Watch(ctx context.Context, name string) (<-chan struct{}, error)
	// List returns the names of the locks held now (by a live session,
	// or released with a hold that lasts) that start with prefix ("" for
	// all), sorted by their bytes; nil if none. It is for operators'
	// tools: it changes no lock's holder (it tidies what it finds dead
	// only where Holder does too), and its cost grows with the number of
	// lock records under prefix; each backend's doc says how. A backend
	// whose store turns out unable to list returns an error matching
	// errors.ErrUnsupported.
	List(ctx context.Context, prefix string) ([]string, error)
	// Members lists the live candidates registered in group (see
	// Session.Register), in registration order, for the rankings of
	// package strategy. It may list one ID twice for a moment while a
	// candidate replaces its session; callers keep the earliest.
	Members(ctx context.Context, group string) ([]strategy.Candidate, error)
}

// Session is one candidate's liveness on a backend. Every lock acquired
// through a session lives only as long as the session does: one KeepAlive
// keeps them all alive, and losing the session loses them all. The holder
// of a lock is the session, not the candidate ID: two sessions opened with
// the same ID are two holders. A Session is safe for concurrent use.
//
// Once the session has expired, Acquire and KeepAlive return an error
// matching ErrSessionLost, Release one matching ErrNotHeld (and possibly
// ErrSessionLost), and Close returns nil or ErrSessionLost. A call whose
// context ends before the backend answered returns an error matching
// ErrUnavailable and the context's error.
type Session interface {
	// ID returns the candidate ID the session was opened for.
	ID() string
	// Acquire takes the lock name if it is free, or if this session already
	// holds it (then it returns the same token and keeps the first lease).
	// It returns an error matching ErrHeld if another session holds it. A
	// lease > 0 bounds the lock: it is lost lease after the start of Acquire
	// even if the session lives on; 0 ties it to the session only; < 0 is
	// ErrInvalid.
	Acquire(ctx context.Context, name string, lease time.Duration) (events.Token, error)
	// KeepAlive extends the session, and so every lock it holds, by its TTL,
	// and confirms those locks, in one round trip whatever their number.
	// It returns an error matching ErrSessionLost if the session expired
	// before the call arrived. Locks it finds the backend no longer holds
	// for the session are reported by Lost; the call still succeeds.
	KeepAlive(ctx context.Context) error
	// Lost returns the locks that Acquire granted this session, that it has
	// not released since, and that the backend was found to hold for it no
	// more although the session lives (deleted or evicted behind its back,
	// their lease revoked), by name with the token they were granted under;
	// nil if none. KeepAlive checks every lock; a session with Losses
	// reports a deletion sooner, and may then also report the locks of a
	// session whose end it saw before KeepAlive reports the session lost.
	// A name leaves Lost when Acquire grants it again or Release is called
	// for it under its token. Lost does not block.
	Lost() map[string]events.Token
	// Losses returns a channel that receives a value whenever Lost gains a
	// lock, where the backend can push the loss of a lock (a watch on the
	// session's own keys): a lock deleted, revoked or taken over behind the
	// session's back is then reported within milliseconds, as far as the
	// backend sees it (each backend's doc says what it pushes: Redis pushes
	// take-overs, not bare deletes), not only after the next KeepAlive. Signals coalesce (the buffer holds one), so the receiver
	// reads Lost. The same channel on every call; it is never closed. The
	// first call may start the watch that feeds it; Close stops it. nil
	// where the backend pushes no losses: KeepAlive alone finds them.
	Losses() <-chan struct{}
	// Release gives up the lock name held under token. With hold > 0 the
	// lock stays held for hold after the call (a minimum hold, so late
	// candidates skip), by nobody alive: Holder still reports the releasing
	// candidate and token, and it outlives the session. With hold 0 it is
	// free at once and waiters are woken; < 0 is ErrInvalid. It returns an
	// error matching ErrNotHeld if this session does not hold name under
	// token, and then changes nothing.
	Release(ctx context.Context, name string, token events.Token, hold time.Duration) error
	// Close ends the session and frees every lock it holds (but locks
	// released with a hold stay held until the hold ends). Calling Close
	// again returns nil; any other call after Close returns an error
	// matching ErrSessionClosed.
	Close(ctx context.Context) error
	// Register adds the session's candidate to group, or updates its
	// entry, in the registry Backend.Members lists: the backend assigns
	// Order at the first registration of this session (strictly
	// increasing per group, over the life of the backend's data) and keeps
	// it on updates; Score, Weight and Meta are replaced. The ID is the
	// session's, and the entry lives as long as the session. It returns
	// the entry as stored.
	Register(ctx context.Context, group string, c strategy.Candidate) (strategy.Candidate, error)
	// Deregister removes the session's entry from group; removing an entry
	// that is not there is not an error.
	Deregister(ctx context.Context, group string) error
}

// ReleaseWatcher is implemented by backends that can wake a waiting
// candidate on the releases of a lock alone (Redis), so that another
// candidate taking the lock wakes nobody. A backend whose line of waiters
// decides who is next has no use for it.
type ReleaseWatcher interface {
	// WatchReleases is Backend.Watch for a candidate waiting for name: the channel
	// receives a value when name may have become free after an Acquire
	// found it held, not when it is taken. Call it after an Acquire found
	// name held, then Acquire again before waiting: a release between the
	// two Acquires is not missed. Signals coalesce (the buffer holds one);
	// the backend closes the channel when ctx ends or the watch breaks.
	WatchReleases(ctx context.Context, name string) (<-chan struct{}, error)
}

// LineWatcher is implemented by the sessions of backends whose waiters
// join a lock's line only when they say that they wait (Kubernetes), so
// that a candidate that only tries (a run that skips on contention)
// writes nothing. Such sessions are Dequeuers too: a session in line may
// become the holder without being told.
type LineWatcher interface {
	// WatchInLine is Backend.Watch for a candidate waiting for name on
	// this session: while the channel is open, an Acquire of the session
	// that finds name held puts the session in name's line, so that a
	// release may make it the holder. Call it after an Acquire found name
	// held, then Acquire again before waiting. Signals coalesce (the
	// buffer holds one); the backend closes the channel when ctx ends or
	// the watch breaks. Ending the watch does not take the session out of
	// the line: Dequeue does.
	WatchInLine(ctx context.Context, name string) (<-chan struct{}, error)
}

// Holder describes who holds a lock, and what the store says of the term.
// Expires moves on with every renewal: to tell one term from another,
// compare ID and Token.
type Holder struct {
	// ID is the holding candidate's ID; empty when the lock is free.
	ID string
	// Token is the fencing token of the holder's term.
	Token events.Token
	// Expires is when the term ends unless its session is renewed: the
	// end of the session, or of the lock's own lease or hold if that comes
	// first, on the store's clock (a store that counts a remaining time
	// down gives the reader's clock plus it); zero if the store does not
	// say.
	Expires time.Time
	// Session is the store's name of the holding session (an etcd lease
	// ID in hex, a session node, key, row, record or Lease); "" for a
	// lock released with a hold, or a store that has none.
	Session string
}

// Dequeuer is implemented by the sessions of backends that queue waiters
// (ZooKeeper): an Acquire that finds the lock held leaves the session in
// line, and the session may later become the holder without being told.
// A group campaign that takes one slot leaves the other slots' lines with
// Dequeue, so it never holds two.
type Dequeuer interface {
	// Dequeue takes the session out of name's line. If the line has made
	// it the holder but no Acquire has told it so, the lock is released
	// (and waiters woken). A lock the session was told it holds is left
	// alone; not being in the line is not an error.
	Dequeue(ctx context.Context, name string) error
}
