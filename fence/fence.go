// Package fence keeps a stale leader's writes out of a resource that does
// not live in the lock's store: a file server, a queue, another service.
//
// A term's fencing token strictly increases per lock across every holder,
// so a resource that remembers the highest token it has seen for a lock,
// and refuses writes under lower ones, refuses the writes of a leader that
// was paused (a GC pause, a stopped VM, a partition) past its deadline
// while another was elected. A Guard is that memory, for code that runs
// beside the resource; Guard.Handler puts it in front of an HTTP service,
// and SetHeaders is the client's half.
//
// When the resource lives in the lock's own store, use the backend's
// native fence instead, which checks the lock itself in the same
// transaction as the write. Every backend names it Fence, in the shape of
// its store: a comparison for your Txn on etcd, a script run with the
// check on Redis, ops run in one multi on ZooKeeper, a check inside your
// transaction on PostgreSQL and MySQL, a conditioned
// update on Kubernetes, a write conditioned on the lock's revision on
// NATS, a check and an update conditioned on the token on MongoDB
// (FencedUpdate) and DynamoDB, ops after a check-index in one
// transaction on Consul, a function run under the lock on the memory
// backend.
//
// What fencing cannot cover: a side effect the resource does not check
// (an email sent, a payment made through a service that knows no tokens)
// is not undone by any token. A Guard also only orders the writers it
// sees: two Guards in front of one resource each keep their own highest
// token.
package fence

import (
	"context"
	"fmt"
	"sync"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
)

// Guard admits a write for a lock only under a token at least the highest
// it has admitted for that lock. The zero Guard is ready to use; it is
// safe for concurrent use, and must not be copied after first use.
//
// Writes under one token run concurrently. A write under a higher token
// first waits for the writes under lower ones that are running to return,
// so a stale write never lands after the new leader's first one; from
// then on, lower tokens are refused.
type Guard struct {
	// Save, if set, is called each time a lock's highest token rises,
	// before the write under it runs, so that the highest tokens survive a
	// restart (give them back with Load when the process starts). An error
	// refuses that write and leaves the token where it was.
	Save func(ctx context.Context, lock string, token events.Token) error

	mu    sync.Mutex
	locks map[string]*entry
}

// entry is one lock's state: writes under the highest token hold rw
// shared; raising the token holds it exclusively.
type entry struct {
	// raising serializes raises, so that only a raise that found its token
	// still higher waits for rw: a raise to the token already in force,
	// decided on a stale look, must not queue for rw and hold back the
	// writes under that token (with writes that wait for each other, a
	// deadlock).
	raising sync.Mutex
	rw      sync.RWMutex
	highest events.Token // written only with raising and rw held
}

// entry returns lock's entry, made on first use.
func (g *Guard) entry(lock string) *entry {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.locks == nil {
		g.locks = map[string]*entry{}
	}
	e := g.locks[lock]
	if e == nil {
		e = &entry{}
		g.locks[lock] = e
	}
	return e
}

// Load raises lock's highest token to token, as restored from storage when
// the process starts; it never lowers it and does not call Save.
func (g *Guard) Load(lock string, token events.Token) {
	e := g.entry(lock)
	e.raising.Lock() // raise reads highest under raising alone
	defer e.raising.Unlock()
	e.rw.Lock()
	defer e.rw.Unlock()
	e.highest = max(e.highest, token)
}

// Do runs write if token is at least the highest token admitted for lock,
// and returns write's error. A lower token, or token 0 (a run without the
// lock, campaign.WithFailOpen), is refused with an error matching
// backends.ErrNotHeld, and write does not run. lock is the caller's key
// for the resource's lock: the lock name, or for a group one key per slot
// (events.Event's Name and Slot, say "name/slot"), since each slot has
// tokens of its own. ctx is passed to Save and to write.
func (g *Guard) Do(ctx context.Context, lock string, token events.Token, write func(ctx context.Context) error) error {
	if write == nil {
		return fmt.Errorf("%w: fence: nil write", backends.ErrInvalid)
	}
	if token == 0 {
		return fmt.Errorf("%w: fence: %q: token 0 is no term's", backends.ErrNotHeld, lock)
	}
	e := g.entry(lock)
	for {
		e.rw.RLock()
		highest := e.highest
		if token == highest {
			defer e.rw.RUnlock()
			return write(ctx)
		}
		e.rw.RUnlock()
		if token < highest {
			return stale(lock, token, highest)
		}
		// A higher token: wait for the writes under lower ones, then
		// raise it, and take the shared hold again to write (unless a
		// still higher token came meanwhile).
		if err := g.raise(ctx, e, lock, token); err != nil {
			return err
		}
	}
}

// raise makes token lock's highest, once the writes running under lower
// tokens have returned, if it is still higher and Save takes it.
func (g *Guard) raise(ctx context.Context, e *entry, lock string, token events.Token) error {
	e.raising.Lock()
	defer e.raising.Unlock()
	if token <= e.highest {
		return nil // raised meanwhile; Do looks again
	}
	e.rw.Lock()
	defer e.rw.Unlock()
	if g.Save != nil {
		if err := g.Save(ctx, lock, token); err != nil {
			return fmt.Errorf("fence: save %q token %d: %w", lock, token, err)
		}
	}
	e.highest = token
	return nil
}

// stale is the error of a write under token below highest.
func stale(lock string, token, highest events.Token) error {
	return fmt.Errorf("%w: fence: %q: token %d is stale, %d has written", backends.ErrNotHeld, lock, token, highest)
}
