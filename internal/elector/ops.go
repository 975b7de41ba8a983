package elector

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
)

type opKind int

const (
	opWatch opKind = iota
	opAcquire
	opRelease
	opRegister
	opRank
	opDisown
	opAudit
)

// op is one backend call in flight.
type op struct {
	kind   opKind
	sess   backends.Session // the session the call was made on
	cancel context.CancelFunc
	stale  bool // the actor has moved on: only discard runs
}

// outcome is what a call hands back: what to do with its result (apply),
// and what to free instead if the actor has moved on (discard, optional).
type outcome struct {
	apply, discard func()
}

// release is a resignation waiting to release its term's lock.
type release struct {
	term  *term
	sess  backends.Session
	reply chan error // nil at shutdown
}

// errNotSent marks the result of a call that never reached the backend:
// it was given up while it waited for its turn on the session.
var errNotSent = errors.New("campaign: call not sent")

// call makes f the op in flight: f runs in a goroutine when its turn on
// the session comes (see limiter; until then it is a queued closure), its
// context bounded by the TTL from then on, and its outcome is handed to
// done. A release survives the end of Run's context: it is what lets the
// next leader in at once. prep, if not nil, runs first in a goroutine of
// its own, before the turn is asked for (a release waits there for the
// work bound to its term).
func (a *actor) call(kind opKind, prep func(), f func(ctx context.Context, sent error) outcome) {
	parent := a.ctx
	if kind == opRelease {
		parent = context.WithoutCancel(a.ctx)
	}
	wctx, cancel := context.WithCancel(parent)
	o := &op{kind: kind, sess: a.on.sess, cancel: cancel}
	a.op = o
	lane := laneTake
	if kind == opRelease || kind == opDisown {
		lane = laneFree
	}
	run := func(err error) {
		defer a.wg.Done()
		defer cancel()
		if err != nil {
			a.done(o, f(wctx, fmt.Errorf("%w: %w", errNotSent, err)))
			return
		}
		defer a.on.calls.done(time.Now())
		ctx, stop := context.WithTimeout(wctx, a.cfg().TTL)
		defer stop()
		a.done(o, f(ctx, nil))
	}
	a.wg.Add(1)
	if prep == nil {
		a.on.calls.start(wctx, lane, run)
		return
	}
	go func() {
		prep()
		a.on.calls.start(wctx, lane, run)
	}()
}

// done hands a call's outcome over: applied if the actor still wants it,
// discarded if it moved on (a stop, or a new session for any call but a
// release).
func (a *actor) done(o *op, out outcome) {
	a.e.mu.Lock()
	defer a.e.mu.Unlock()
	a.op = nil
	switch {
	case o.stale || (o.sess != a.on.sess && o.kind != opRelease):
		if out.discard != nil {
			out.discard()
		}
	default:
		out.apply()
	}
	a.settle()
}

// startAcquire tries the slots one after another, from one that depends on
// the candidate so that candidates spread over the slots, until one is had.
// When every slot was found held and the watch has signalled since for
// some (a group's waiter woken by a release), it asks only those: the
// others are still held, or their own signal would have marked them. So a
// woken waiter's first request is for the slot that was let go, and a
// release of one slot does not send every waiter through all of them.
func (a *actor) startAcquire() {
	s := a.on.sess
	only := a.wait.asks()
	slots, id, doubt := a.e.slots, a.cfg().ID, a.doubt
	a.at.try = never // a watch signal while it asks makes the next try due at once
	a.call(opAcquire, nil, func(ctx context.Context, sent error) outcome {
		slot, tok, left, err := 0, events.Token(0), doubt, sent
		if sent == nil {
			slot, tok, left, err = acquireAny(ctx, s, slots, id, doubt, only)
		}
		return outcome{
			apply: func() { a.acquired(slot, tok, left, err) },
			discard: func() {
				a.cfg().Hooks.Try(a.e.name, a.e.label, Canceled)
				switch {
				case err == nil:
					// Won for nothing: released, so no later term reuses its token.
					name := slots[slot]
					a.background(func(ctx context.Context) { _ = s.Release(ctx, name, tok, 0) })
					a.at.try = time.Now()
				case sent == nil && s == a.on.sess:
					// Given up mid-call (a stop, say), the acquire may still
					// have taken a lock or queued the session: a session that
					// lives on must disown them.
					a.doubt = left
				}
			},
		}
	})
}

func (a *actor) acquired(slot int, token events.Token, doubt []string, err error) {
	a.cfg().Logger.Debug("acquired", "name", a.e.name, "slot", slot, "token", token, "doubt", doubt, "err", err)
	if !errors.Is(err, errNotSent) {
		a.doubt = doubt
	}
	switch {
	case err == nil:
		a.succeed()
		a.cfg().Hooks.Try(a.e.name, a.e.label, NoReason)
		a.elect(slot, token)
	case errors.Is(err, backends.ErrHeld):
		a.succeed()
		a.lost()
		a.wait.held()
		a.cfg().Hooks.Try(a.e.name, a.e.label, Contention)
		now := time.Now()
		next := now.Add(a.cfg().RetryPause())
		if a.needWatch(now) {
			next = now // no watch yet: set it up, then try again
		}
		a.at.try = earlier(a.at.try, next) // released while we asked: go on now
		if a.gate != nil {
			a.gate.fresh = false
		}
		a.cfg().Logger.Debug("lock held by another candidate", "name", a.e.name, "id", a.cfg().ID, "err", err)
	case errors.Is(err, backends.ErrSessionLost), errors.Is(err, backends.ErrSessionClosed):
		a.cfg().Hooks.Try(a.e.name, a.e.label, BackendError)
		a.failed("acquire", err)
		a.lose(err)
	case errors.Is(err, backends.ErrInvalid):
		// A closed client, or a name this backend cannot store: no retry
		// cures it (a backend whose Open sends nothing reports it here).
		a.cfg().Hooks.Try(a.e.name, a.e.label, InvalidInput)
		a.failed("acquire", err)
		a.stop(events.ErrSessionLost, Invalid(err))
	default:
		a.cfg().Hooks.Try(a.e.name, a.e.label, BackendError)
		a.failed("acquire", err)
		a.at.try = time.Now().Add(a.backoff())
	}
}

// startDisown disowns the locks in doubt: a candidate the strategy no
// longer prefers stops trying, and one elected to a slot waits for the
// others no more, so a lock its session was given untold must not stay
// held for nobody, nor a line make it a holder it would never learn of.
func (a *actor) startDisown() {
	s, doubt := a.on.sess, a.doubt
	a.call(opDisown, nil, func(ctx context.Context, sent error) outcome {
		left := doubt // a call not sent disowned none
		if sent == nil {
			left = disownAll(ctx, s, doubt)
		}
		return outcome{apply: func() {
			a.doubt = left
			if len(left) > 0 { // tried again after a pause, not at once
				a.at.disown = time.Now().Add(a.cfg().RetryPause())
			}
		}}
	})
}

// startRelease releases the oldest resigned term's lock once its work has
// returned. If the release fails, the lock may still be held by this
// session, which would hand the same token back to a later acquire: it is
// tried again later, and nothing is acquired meanwhile.
func (a *actor) startRelease() {
	r := a.releases[0]
	a.releases = a.releases[1:]
	name, tok := a.e.slots[r.term.event.Slot], r.term.event.Token
	a.call(opRelease, func() { a.drain(r.term) }, func(ctx context.Context, sent error) outcome {
		err := sent
		if r.sess != nil && sent == nil {
			err = r.sess.Release(ctx, name, tok, 0)
		}
		a.cfg().Logger.Debug("release", "name", name, "token", tok, "sent", r.sess != nil, "err", err)
		lost := errors.Is(err, backends.ErrSessionLost)
		if r.sess == nil || lost || errors.Is(err, backends.ErrNotHeld) || errors.Is(err, backends.ErrSessionClosed) {
			err = nil // the session, and so the lock, is gone: the resignation is done
		}
		return outcome{apply: func() {
			if lost && r.sess == a.on.sess {
				// Nothing more is acquired on it: a new session comes.
				a.lose(fmt.Errorf("release found the session gone: %w", backends.ErrSessionLost))
			}
			a.released(r, err)
		}}
	})
}

// released answers the resignation, or queues the release again.
func (a *actor) released(r release, err error) {
	if err != nil {
		a.failed("release", err)
		if r.sess == a.on.sess && a.end.phase == running {
			a.releases = append([]release{r}, a.releases...)
			a.at.release = time.Now().Add(a.backoff())
			return
		}
		if r.sess == a.on.sess {
			// Stopping: finish leaves it to the session.
			a.releases = append(a.releases, r)
			return
		}
	}
	if r.reply != nil {
		// A resignation's pause counts from the release, not the revoke:
		// a release that was retried must still let the others in first.
		a.at.notBefore = later(a.at.notBefore, time.Now().Add(a.cfg().RetryPause()))
		r.reply <- err
	}
}
