package record

import (
	"context"
	"errors"
	"time"

	"github.com/hustings/hustings/backends/internal/hub"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/strategy"
)

// ErrConflict is returned by a Driver's conditioned write whose condition
// failed: a record exists where CreateLock expected none, or the version
// differs from the one given. It is never returned by the Store.
var ErrConflict = errors.New("record: conflict")

// Lock is a lock record.
type Lock struct {
	// Name is the lock's name (the record's key).
	Name string
	// Session is the ID of the session record that holds the lock.
	Session string
	// Candidate is that session's candidate ID, for Holder.
	Candidate string
	// Token is the fencing token of the term. In a write, 0 asks the
	// store for a fresh one (the write takes the lock).
	Token events.Token
	// Expires, when not zero, ends the lock (its lease, or its hold) on
	// the store's clock, even if its session lives on.
	Expires time.Time
	// Hold marks a lock released with a hold: held by nobody alive until
	// Expires.
	Hold bool
	// TTL, in a write, is the lease or hold Expires was computed from,
	// for a store that expires records itself (a per-key TTL) and writes
	// it instead of Expires; 0: none. Reads leave it 0.
	TTL time.Duration
	// Version is the store's version of the record; 0: no record.
	Version uint64
}

// Session is a session record.
type Session struct {
	// ID is the session's ID: 32 hex digits, chosen by the core.
	ID string
	// Candidate is the candidate ID the session was opened for.
	Candidate string
	// TTL is how long the session lives after its creation or renewal.
	TTL time.Duration
	// Version is the store's version of the session record as its last
	// write returned (CreateSession, Renew), for a write conditioned on
	// it; 0 for a store that keeps none.
	Version uint64
}

// Renewal is what Renew reports.
type Renewal struct {
	// Alive is false if the session had expired (or was never made); it
	// was not renewed.
	Alive bool
	// Version is the session record's version after the renewal.
	Version uint64
	// Locks are the lock records that name the session.
	Locks []Lock
	// Now is the store's clock at the renewal (the client's if the store
	// has none).
	Now time.Time
}

// View is what ReadLock reads: one lock record and the states of the
// sessions it concerns, all as of one instant of the store.
type View struct {
	// Lock is the record; Version 0 if there is none.
	Lock Lock
	// HolderAlive reports that the session Lock names lives.
	HolderAlive bool
	// HolderExpires is when that session expires unless renewed, on the
	// store's clock; zero if unknown (the store then pushes its expiry).
	HolderExpires time.Time
	// SelfAlive reports that the session the read was made for lives.
	SelfAlive bool
	// Now is the store's clock at the read (the client's if the store
	// has none).
	Now time.Time
}

// Driver is a store of session and lock records. See the package doc.
type Driver interface {
	Registrar // every store keeps the candidate registry
	// CreateSession writes a new session record that lives s.TTL from
	// now, and returns its version.
	CreateSession(ctx context.Context, s Session) (version uint64, err error)
	// Renew extends session s by its TTL if it still lives, and reads the
	// lock records that name it: one round trip. held are the locks the
	// core was granted for s (Name, Token and the Version its write
	// returned): a store that finds the records naming s itself (an
	// index) may ignore them; one that cannot reads those records by name.
	// held is nil when the feed confirms them (Feed.Progress): renew alone.
	Renew(ctx context.Context, s Session, held []Lock) (Renewal, error)
	// DeleteSession deletes session s's record, its lock records that are
	// not holds, and its registry entries. held are as for
	// Renew. It returns the names of the locks it freed, for their
	// waiters. A session record already gone is backends.ErrSessionLost
	// or nil.
	DeleteSession(ctx context.Context, s Session, held []Lock) ([]string, error)
	// ReadLock reads lock name and the sessions it concerns; self is the
	// reading session's ID, "" for none (Holder).
	ReadLock(ctx context.Context, name, self string) (View, error)
	// CreateLock writes l where no record of l.Name is, or returns
	// ErrConflict. It returns the record as written (Token, Version).
	CreateLock(ctx context.Context, l Lock) (Lock, error)
	// SwapLock writes l over the record of l.Name at version, or returns
	// ErrConflict. It returns the record as written.
	SwapLock(ctx context.Context, l Lock, version uint64) (Lock, error)
	// DeleteLock deletes the record of name at version, or returns
	// ErrConflict.
	DeleteLock(ctx context.Context, name string, version uint64) error
}

// Notifier is implemented by drivers whose store can push changes of
// records (a KV watch, a change stream). A Store on a Notifier pushes
// wake-ups (Watch, WatchReleases) and the losses of locks (Session.Losses).
type Notifier interface {
	// Notify runs the store's change feed until ctx ends (then it returns
	// nil) or the feed breaks (an error). It calls f.Ready once the feed
	// is confirmed (no change after it is missed), then f.Changed for
	// every write of a lock record and f.Ended for the end of every
	// session record, in the store's order, from one goroutine.
	Notify(ctx context.Context, f *Feed) error
}

// Feed receives a Notifier's changes. Its methods are called from the
// goroutine that runs Notify, never concurrently.
type Feed struct {
	t *transport
	r *hub.Run
}

// Ready reports that the feed is confirmed: no change after it is missed.
func (f *Feed) Ready() { f.r.Ready(nil) }

// Changed reports the lock record l.Name as written, with the write's
// Version, which must be greater than every earlier version of the
// record. A removal or an expiry of the record is l with no Session and
// Hold false (and the removal's version, where the store has one).
func (f *Feed) Changed(l Lock) { f.t.pushed(f.r, l) }

// Progress reports that every change of the store up to version was
// delivered, writes of session records included: for a store whose
// versions are one sequence over all its records (a stream's sequence),
// in which Renewal.Version is too. A feed that reports it lets a pushed
// session's KeepAlive write the renewal alone (held nil) and confirm its
// locks once the feed delivered it.
func (f *Feed) Progress(version uint64) { f.r.Advance(version) }

// Ended reports that the record of session sid ended (expired or
// deleted): the locks that name it are free.
func (f *Feed) Ended(sid string) { f.t.ended(f.r, sid) }

// Registrar is a driver's registry of each group's live candidates (for
// Backend.Members): entries tied to session records, gone when their
// session is.
type Registrar interface {
	// Register stores session sid's entry in group if the session lives:
	// Order is assigned at the entry's first registration (strictly
	// increasing per group over the life of the store's data) and kept on
	// updates; Score, Weight and Meta are replaced; c.ID is ignored. It
	// returns the order stored, and alive false (and nothing stored) if
	// the session had expired.
	Register(ctx context.Context, group, sid string, c strategy.Candidate) (order uint64, alive bool, err error)
	// Deregister deletes session sid's entry from group, if any.
	Deregister(ctx context.Context, group, sid string) error
	// Members lists the entries of group whose sessions live, in order,
	// with their candidate IDs.
	Members(ctx context.Context, group string) ([]strategy.Candidate, error)
}
