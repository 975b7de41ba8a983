package elector

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
)

// A session can come to hold a lock, or wait in its line, without the
// campaign having been told: an acquire whose answer was lost (a timeout
// after the request went out, which the server may still apply), and on
// backends that queue waiters (ZooKeeper) any acquire that found the lock
// held. Such locks are "in doubt". A campaign's next acquire of the lock
// adopts it (the holder gets its own token back); whatever else is in
// doubt is disowned when the campaign wins another slot, steps out of the
// race (a strategy no longer prefers it) or ends while the session lives
// on, so that no lock stays held for nobody and no line makes the session
// a holder it would never learn of.

// acquireAny tries the slots one after another, starting from one that
// depends on the candidate ID so that candidates spread over the slots,
// until one is had; the other locks in doubt are the caller's to disown
// (a campaign does it after its Elected, a run before fn). It returns
// ErrHeld (wrapped) when all are held, and stops at the first other
// failure. A non-zero only skips each slot i < 64 whose bit i is clear.
// doubt is the campaign's doubt before the call; the call returns it
// after.
func acquireAny(ctx context.Context, s backends.Session, slots []string, id string, doubt []string, only uint64) (int, events.Token, []string, error) {
	h := fnv.New32a()
	h.Write([]byte(id))
	first := int(h.Sum32() % uint32(len(slots)))
	_, queues := s.(backends.Dequeuer)
	doubt = slices.Clone(doubt)
	var err error
	for i := range slots {
		slot := (first + i) % len(slots)
		if only != 0 && slot < 64 && only&(1<<slot) == 0 {
			continue
		}
		name := slots[slot]
		tok, e := s.Acquire(ctx, name, 0)
		if e == nil {
			return slot, tok, slices.DeleteFunc(doubt, func(n string) bool { return n == name }), nil
		}
		err = e
		settled := errors.Is(e, backends.ErrHeld) && !queues
		switch {
		case settled:
			doubt = slices.DeleteFunc(doubt, func(n string) bool { return n == name })
		default:
			doubt = inDoubt(doubt, name)
		}
		if !errors.Is(e, backends.ErrHeld) {
			break
		}
	}
	if err == nil { // only named no slot there is
		err = fmt.Errorf("%w: no slot of %d asked", backends.ErrHeld, len(slots))
	}
	return 0, 0, doubt, err
}

// inDoubt returns doubt with name in it, once.
func inDoubt(doubt []string, name string) []string {
	if slices.Contains(doubt, name) {
		return doubt
	}
	return append(doubt, name)
}

// disownAll disowns each of names and returns those it could not.
func disownAll(ctx context.Context, s backends.Session, names []string) []string {
	var left []string
	for _, n := range names {
		if err := disown(ctx, s, n); err != nil {
			left = append(left, n)
		}
	}
	return left
}

// disown makes sure the session neither holds nor waits for name untold:
// where the backend queues waiters it leaves the line (which releases the
// lock if the line made it the holder); elsewhere it takes the lock, which
// a holder gets back under its own token, and releases it at once.
func disown(ctx context.Context, s backends.Session, name string) error {
	if d, ok := s.(backends.Dequeuer); ok {
		return d.Dequeue(ctx, name)
	}
	tok, err := s.Acquire(ctx, name, 0)
	switch {
	case errors.Is(err, backends.ErrHeld):
		return nil
	case err != nil:
		return err
	}
	return s.Release(ctx, name, tok, 0)
}
