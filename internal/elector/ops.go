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
	opOpen opKind = iota
	opKeepAlive
	opWatch
	opAcquire
	opRelease
	opRegister
	opRank
	opLeave
	opAudit
)

// op is one backend call in flight.
type op struct {
	kind   opKind
	sess   backends.Session // the session the call was made on
	start  time.Time
	cancel context.CancelFunc
	done   chan result // buffer 1: the call never blocks on the actor
	stale  bool        // the actor has moved on; the result is only cleaned up
}

// result is what a call returns to the actor.
type result struct {
	sess        backends.Session
	slot        int
	token       events.Token
	watch       <-chan struct{}
	watchCancel context.CancelFunc
	reply       chan error
	from        backends.Session  // the session a release was made on
	retry       release           // the release itself, to try again
	view        view              // what a rank read
	holders     []backends.Holder // what an audit read
	doubt       []string          // an acquire's or a leave's new doubt (see disown)
	err         error
}

// release is a resignation waiting to release its term's lock.
type release struct {
	term  *term
	sess  backends.Session
	reply chan error // nil at shutdown
}

// opDone returns the channel of the op in flight, or nil.
func (a *actor) opDone() <-chan result {
	if a.op == nil {
		return nil
	}
	return a.op.done
}

// errNotSent marks the result of a call that never reached the backend:
// it was given up while it waited for its turn on a shared session.
var errNotSent = errors.New("campaign: call not sent")

// call runs f in a goroutine the actor owns and makes it the op in
// flight. On a shared session, f first waits for its turn (see limiter);
// its context is bounded by timeout from then on. A release survives the
// end of Run's context: it is what lets the next leader in at once.
func (a *actor) call(kind opKind, timeout time.Duration, f func(ctx context.Context) result) {
	a.callAfter(nil, kind, timeout, f)
}

// callAfter is call with prep run first in the goroutine, before the turn
// is taken and the timeout starts (a release waits there for the work
// bound to its term).
func (a *actor) callAfter(prep func(), kind opKind, timeout time.Duration, f func(ctx context.Context) result) {
	parent := a.ctx
	if kind == opRelease {
		parent = context.WithoutCancel(a.ctx)
	}
	wctx, cancel := context.WithCancel(parent)
	o := &op{kind: kind, sess: a.sess, start: time.Now(), cancel: cancel, done: make(chan result, 1)}
	a.op = o
	lim, lane := a.limiter(), laneTake
	if kind == opRelease || kind == opLeave {
		lane = laneFree
	}
	a.wg.Go(func() {
		defer cancel()
		if prep != nil {
			prep()
		}
		if lim != nil {
			if err := lim.wait(wctx, lane); err != nil {
				o.done <- result{err: fmt.Errorf("%w: %w", errNotSent, err)}
				return
			}
			defer lim.done()
		}
		ctx, stop := context.WithTimeout(wctx, timeout)
		defer stop()
		o.done <- f(ctx)
	})
}

// limiter returns the shared session's limiter, or nil: a session of the
// actor's own has one call in flight at a time.
func (a *actor) limiter() *limiter {
	if a.shared == nil {
		return nil
	}
	return a.shared.calls
}

func (a *actor) startOpen() {
	a.call(opOpen, a.cfg.TTL, func(ctx context.Context) result {
		s, err := a.e.backend.Open(ctx, a.cfg.ID, a.cfg.TTL)
		return result{sess: s, err: err}
	})
}

func (a *actor) startKeepAlive() {
	s := a.sess
	timeout := a.cfg.TTL
	if a.term != nil {
		timeout = max(time.Until(a.term.deadline), time.Millisecond)
	}
	a.call(opKeepAlive, timeout, func(ctx context.Context) result {
		return result{err: s.KeepAlive(ctx)}
	})
}

// startAcquire tries the slots one after another, from one that depends on
// the candidate so that candidates spread over the slots, until one is had.
func (a *actor) startAcquire() {
	s := a.sess
	a.woken = false
	slots, id, doubt := a.e.slots, a.cfg.ID, a.doubt
	a.cfg.Observer.Attempt(a.e.name, a.e.label)
	a.call(opAcquire, a.cfg.TTL, func(ctx context.Context) result {
		slot, tok, doubt, err := acquireAny(ctx, s, slots, id, doubt)
		return result{slot: slot, token: tok, doubt: doubt, err: err}
	})
}

// startLeave disowns the locks in doubt: a candidate the strategy no
// longer prefers stops trying, so a lock its session was given untold
// must not stay held for nobody, nor a line make it a holder it would
// never learn of.
func (a *actor) startLeave() {
	s, doubt := a.sess, a.doubt
	a.call(opLeave, a.cfg.TTL, func(ctx context.Context) result {
		left := disownAll(ctx, s, doubt)
		return result{doubt: left}
	})
}

// startRelease releases the oldest resigned term's lock once its work has
// returned.
func (a *actor) startRelease() {
	r := a.releases[0]
	a.releases = a.releases[1:]
	a.callAfter(func() { a.drain(r.term) }, opRelease, a.cfg.TTL, func(ctx context.Context) result {
		if r.sess == nil {
			return result{reply: r.reply} // the session, and so the lock, is gone
		}
		res := result{reply: r.reply, from: r.sess, retry: r}
		err := r.sess.Release(ctx, a.e.slots[r.term.event.Slot], r.term.event.Token, 0)
		if errors.Is(err, backends.ErrNotHeld) || errors.Is(err, backends.ErrSessionLost) || errors.Is(err, backends.ErrSessionClosed) {
			err = nil // already gone: the resignation is done
		}
		res.err = err
		return res
	})
}

// finish hands the result of the op in flight to its handler.
func (a *actor) finish(r result) {
	o := a.op
	a.op = nil
	if o.stale || (o.sess != a.sess && o.kind != opOpen && o.kind != opRelease) {
		a.cleanUp(r, o)
		return
	}
	switch o.kind {
	case opOpen:
		a.opened(o.start, r)
	case opKeepAlive:
		a.keptAlive(o.start, r.err)
	case opWatch:
		a.watched(r)
	case opAcquire:
		a.acquired(r)
	case opRelease:
		a.released(r)
	case opRegister:
		a.registeredResult(r.err)
	case opRank:
		a.ranked(r.view, r.err)
	case opLeave:
		if !errors.Is(r.err, errNotSent) {
			a.doubt = r.doubt // what is left is tried again at the next chance
		}
	case opAudit:
		a.audited(r)
	}
}

// cleanUp frees what a call the actor gave up on still returned: a
// session it opened, a watch, a lock acquired on a session that is no
// longer the actor's (released, so no later term reuses its token), and a
// pending reply.
func (a *actor) cleanUp(r result, o *op) {
	if o.kind == opAcquire {
		a.cfg.Observer.NotAcquired(a.e.name, a.e.label, Canceled) // its Attempt was counted
	}
	if o.kind == opAcquire && r.err != nil && o.sess == a.sess && !errors.Is(r.err, errNotSent) {
		// Given up mid-call (a stop, say), the acquire may still have
		// taken a lock or queued the session: a session that lives on
		// must disown them.
		a.doubt = r.doubt
	}
	if o.kind == opAcquire && r.err == nil && o.sess != nil {
		s, name, tok := o.sess, a.e.slots[r.slot], r.token
		a.background(func(ctx context.Context) { _ = s.Release(ctx, name, tok, 0) })
		a.tryAt = time.Now()
	}
	if o.kind == opRank && a.gate != nil {
		a.gate.fresh = false
	}
	if r.sess != nil {
		s := r.sess
		a.background(func(ctx context.Context) { _ = s.Close(ctx) })
	}
	if r.watchCancel != nil {
		r.watchCancel()
	}
	if r.reply != nil {
		r.reply <- r.err
	}
}

func (a *actor) opened(start time.Time, r result) {
	if errors.Is(r.err, backends.ErrInvalid) {
		// Not an outage: the client was closed, or the backend refuses the
		// configuration. Retrying would only log the same error forever.
		a.fail("open session", r.err)
		a.fatal = Invalid(r.err)
		return
	}
	if r.err != nil {
		a.fail("open session", r.err)
		a.openAt = time.Now().Add(a.backoff())
		return
	}
	a.succeed()
	a.sess, a.renewed, a.doubt = r.sess, start, nil
	a.losses = lossesOf(r.sess)
	a.keepAt = start.Add(a.cfg.KeepAlive)
	a.tryAt = time.Now()
	if a.gate != nil {
		a.gate.registered, a.gate.fresh = false, false
	}
}

func (a *actor) keptAlive(start time.Time, err error) {
	a.cfg.Observer.KeepAlive(a.e.label, time.Since(start), err)
	switch {
	case err == nil:
		a.clearErr()
		a.renewed = start
		a.keepAt = start.Add(a.cfg.KeepAlive)
		if a.term != nil && !a.lockLost() {
			a.extend(start.Add(a.cfg.TTL - a.cfg.MarginFor(a.cfg.TTL)))
		}
	case errors.Is(err, backends.ErrSessionLost), errors.Is(err, backends.ErrSessionClosed):
		a.fail("keep-alive", err)
		a.lose(err)
	default:
		a.fail("keep-alive", err)
		a.keepAt = time.Now().Add(a.cfg.RetryPause())
	}
}

func (a *actor) acquired(r result) {
	slot, token, err := r.slot, r.token, r.err
	if !errors.Is(err, errNotSent) {
		a.doubt = r.doubt
	}
	switch {
	case err == nil:
		a.succeed()
		a.cfg.Observer.Acquired(a.e.name, a.e.label)
		a.elect(slot, token)
	case errors.Is(err, backends.ErrHeld):
		a.succeed()
		a.lost = true
		if a.audit.at.IsZero() {
			a.audit.at = time.Now().Add(a.cfg.TTL) // lost for a TTL: audit then
		}
		a.cfg.Observer.NotAcquired(a.e.name, a.e.label, Contention)
		a.tryAt = time.Now().Add(a.cfg.RetryPause())
		if a.gate != nil {
			a.gate.fresh = false
		}
		if a.woken || a.needWatch(time.Now()) {
			a.tryAt = time.Now() // released while we asked, or no watch yet: go on now
		}
		a.cfg.Logger.Debug("lock held by another candidate", "name", a.e.name, "id", a.cfg.ID, "err", err)
	case errors.Is(err, backends.ErrSessionLost), errors.Is(err, backends.ErrSessionClosed):
		a.cfg.Observer.NotAcquired(a.e.name, a.e.label, BackendError)
		a.fail("acquire", err)
		a.lose(err)
	case errors.Is(err, backends.ErrInvalid):
		// A closed client, or a name this backend cannot store: no retry
		// cures it (a backend whose Open sends nothing reports it here).
		a.cfg.Observer.NotAcquired(a.e.name, a.e.label, InvalidInput)
		a.fail("acquire", err)
		a.fatal = Invalid(err)
	default:
		a.cfg.Observer.NotAcquired(a.e.name, a.e.label, BackendError)
		a.fail("acquire", err)
		a.tryAt = time.Now().Add(a.backoff())
	}
}

// released answers the resignation. If the release failed, the lock may
// still be held by this session, which would hand the same token back to a
// later acquire: the session is given up instead, freeing the lock.
func (a *actor) released(r result) {
	if r.err != nil {
		a.fail("release", r.err)
		if a.shared != nil && r.from == a.sess {
			// Keep the shared session; try the release again later, and
			// acquire nothing meanwhile.
			a.releases = append([]release{r.retry}, a.releases...)
			a.releaseAt = time.Now().Add(a.backoff())
			return
		}
		if r.from == a.sess {
			a.discardSession()
		}
	}
	if r.reply != nil {
		r.reply <- r.err
	}
}

// fail records a backend failure.
func (a *actor) fail(what string, err error) {
	a.lastErr = err
	a.failures++
	a.e.setState(func(s *State) { s.Err = err })
	attrs := []any{"name", a.e.name, "id", a.cfg.ID, "err", err}
	if a.term != nil {
		attrs = append(attrs, "slot", a.term.event.Slot, "token", a.term.event.Token, "deadline", a.term.deadline)
	}
	a.cfg.Logger.Warn(what+" failed", attrs...)
}

// succeed clears the last failure and the backoff.
func (a *actor) succeed() {
	a.failures = 0
	a.clearErr()
}

// clearErr clears the last failure but not the backoff: a renewal that
// works says nothing of the calls that failed.
func (a *actor) clearErr() {
	if a.lastErr != nil {
		a.lastErr = nil
		a.e.setState(func(s *State) { s.Err = a.audit.err }) // a misconfiguration stays shown
	}
}
