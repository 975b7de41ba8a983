package elector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
)

// actor is the state of one Run. It lives in Run's goroutine; backend calls
// run one at a time in goroutines it owns (ops), so a hanging backend never
// holds up the deadline, the events or a stop.
type actor struct {
	e   *Elector
	cfg *Config
	ctx context.Context // Run's

	sess     backends.Session
	renewed  time.Time // start of the session's last successful Open or KeepAlive
	term     *term     // the term in force, nil if none
	lastErr  error     // the last backend failure, nil after a success
	failures int       // backend failures in a row, for the backoff

	op       *op            // the backend call in flight, nil if none
	releases []release      // resignations waiting for the op slot
	wg       sync.WaitGroup // every goroutine the actor starts

	openAt, keepAt, tryAt time.Time // when each call is next due
	backoffUntil          time.Time // no acquire before this (after Resign)
	watchAt               time.Time // no new watch before this
	woken                 bool      // a watch signal came while an acquire was in flight
	doubt                 []string  // locks the session may hold or wait for untold (see disown)
	lost                  bool      // a try found the lock held since the last term: watch it

	watch       <-chan struct{}
	watchCancel context.CancelFunc
	losses      <-chan struct{} // the own session's pushed lock losses, nil if none
	gate        *gate           // the strategy's gate, nil without one

	shared        *Session // the shared session's owner; nil: own session
	gen           uint64   // the shared session's generation in use
	sharedChanged <-chan struct{}
	releaseAt     time.Time // no release before this (after a failed one, shared)
	sessionGone   bool      // the shared session is stopping: leave
	fatal         error     // a backend error that no retry can cure: Run returns it
	renewWanted   bool      // elect found the deadline spent: try again after a renewal
	audit         audit     // checks for duplicate IDs and disagreeing slot counts

	wake, deadline *time.Timer
}

func newActor(e *Elector, ctx context.Context) *actor {
	a := &actor{e: e, cfg: &e.cfg, gate: e.gate, shared: e.cfg.Session, ctx: ctx, wake: stoppedTimer(), deadline: stoppedTimer()}
	if a.shared != nil {
		a.adopt()
	}
	return a
}

// run is the actor loop: a select that hands each message to its method.
func (a *actor) run() error {
	defer a.wg.Wait()
	for {
		if a.sessionGone {
			a.shutdown(events.ErrResigned)
			return ErrClosed
		}
		if a.fatal != nil {
			a.shutdown(events.ErrSessionLost)
			return a.fatal
		}
		a.startDue()
		ch, e := a.e.out.Ready()
		select {
		case <-a.ctx.Done():
			a.shutdown(events.ErrCanceled)
			return a.ctx.Err()
		case <-a.e.closing:
			a.shutdown(events.ErrResigned)
			return ErrClosed
		case r := <-a.opDone():
			a.finish(r)
		case <-a.deadline.C:
			a.expire()
		case <-a.wake.C:
		case _, ok := <-a.watch:
			a.watchFired(ok)
		case <-a.losses:
			if a.term != nil {
				a.lockLost()
			}
		case req := <-a.e.resigns:
			a.resign(req)
		case <-a.e.updates:
			a.updated()
		case <-a.sharedChanged:
			a.adopt()
		case ch <- e:
			a.e.out.Sent()
		}
	}
}

// startDue starts the backend call that is due, if the op slot is free,
// or arms the wake timer once, for the earliest of the calls not yet due.
func (a *actor) startDue() {
	if a.op != nil {
		return
	}
	w := waker{now: time.Now(), next: never}
	defer w.arm(a.wake)
	if len(a.releases) > 0 && w.due(a.releaseAt) {
		a.startRelease()
		return
	}
	if a.sess == nil {
		if a.shared == nil && w.due(a.openAt) {
			a.startOpen()
		}
		return // a shared session arrives through sharedChanged
	}
	switch {
	case a.gate != nil && !a.gate.registered && w.due(a.gate.registerAt):
		a.startRegister()
	case a.shared == nil && w.due(a.keepAt):
		a.startKeepAlive()
	case a.term == nil && !a.audit.at.IsZero() && w.due(a.audit.at):
		a.startAudit()
	case a.term == nil && len(a.releases) == 0 && w.due(later(a.tryAt, a.backoffUntil)) && a.startTry(&w):
	case a.term != nil && a.gate != nil && a.gate.preempt > 0 && w.due(a.gate.rankedAt.Add(a.cfg.Retry)):
		a.startRank()
	}
}

// startTry starts what a try for the lock needs next: a watch, a fresh
// rank (with a strategy), or the acquire itself, and reports whether it
// started a call. A candidate the strategy does not prefer waits for its
// next chance instead.
func (a *actor) startTry(w *waker) bool {
	g := a.gate
	switch {
	case a.needWatch(w.now):
		a.startWatch()
	case g != nil && (!g.fresh || !w.now.Before(g.rankedAt.Add(a.cfg.Retry))):
		a.startRank()
	case g != nil && !g.eligible(w.now) && len(a.doubt) > 0:
		a.startLeave()
	case g != nil && !g.eligible(w.now):
		next := g.rankedAt.Add(a.cfg.RetryPause())
		if !g.freeSince.IsZero() {
			next = earlier(next, g.freeSince.Add(g.patience))
		}
		a.tryAt, g.fresh = next, false
		w.due(next)
		return false
	case a.shared != nil && a.shared.orphaned(a.e.slots):
		a.tryAt = w.now.Add(a.cfg.RetryPause()) // an earlier release of ours is pending
		w.due(a.tryAt)
		return false
	default:
		a.startAcquire()
	}
	return true
}

// elect starts a term with the token the backend confirmed.
func (a *actor) elect(slot int, token events.Token) {
	now := time.Now()
	deadline := a.renewed.Add(a.cfg.TTL - a.cfg.MarginFor(a.cfg.TTL))
	if !deadline.After(now) {
		// The session is about to run out: renew first, then acquire again
		// (the same session gets the same token back).
		if a.shared != nil {
			a.renewWanted, a.tryAt = true, now.Add(a.cfg.RetryPause())
			a.shared.report(a.gen)
			return
		}
		a.keepAt, a.tryAt = now, now
		return
	}
	e := events.Event{Kind: events.Elected, Name: a.e.name, Slot: slot, Token: token, Holder: a.cfg.ID, Time: now, Deadline: deadline}
	t := newTerm(a.ctx, e)
	a.term, a.audit, a.lost = t, audit{}, false
	a.deadline.Reset(deadline.Sub(now))
	a.stopWatch()
	a.e.mu.Lock()
	a.e.current = t
	a.e.state.Leader, a.e.state.Slot, a.e.state.Token = true, slot, token
	a.e.state.Deadline, a.e.state.LastEvent = deadline, e
	a.e.state.Err = a.lastErr // an audit's finding, if any, is past
	a.e.mu.Unlock()
	a.cfg.Observer.TermStarted(a.e.name, a.e.label)
	a.cfg.Logger.Info("elected", "name", a.e.name, "slot", slot, "id", a.cfg.ID, "token", token, "deadline", deadline)
	a.e.publish(e)
	select {
	case a.e.elected <- struct{}{}:
	default:
	}
}

// extend moves the term's deadline after a successful renewal.
func (a *actor) extend(deadline time.Time) {
	a.term.setDeadline(deadline)
	a.deadline.Reset(time.Until(deadline))
	a.e.setState(func(s *State) { s.Deadline = deadline })
}

// revoke ends the term in force: its context is cancelled and Revoked is
// published, in that order and at once.
func (a *actor) revoke(reason error) *term {
	t := a.term
	a.term = nil
	a.deadline.Stop()
	e := t.event
	e.Kind, e.Time, e.Deadline, e.Reason = events.Revoked, time.Now(), t.deadline, reason
	// State stops reporting leadership before the term's context is
	// cancelled: whoever sees the cancellation and reads State sees no term.
	a.e.setState(func(s *State) {
		s.Leader, s.LastEvent = false, e
	})
	a.e.end(t)
	// Metrics and logs first: whoever reads the event may look at them.
	a.cfg.Observer.TermEnded(a.e.name, a.e.label, events.ReasonCode(reason))
	level := slog.LevelWarn
	if errors.Is(reason, events.ErrResigned) || errors.Is(reason, events.ErrCanceled) {
		level = slog.LevelInfo
	}
	a.cfg.Logger.Log(context.Background(), level, "revoked", "name", a.e.name, "id", a.cfg.ID, "slot", e.Slot, "token", e.Token, "reason", reason)
	a.e.publish(e)
	return t
}

// expire runs at the term's local deadline: the term ends whatever the
// backend is doing, and the session is given up.
func (a *actor) expire() {
	if a.term == nil {
		return
	}
	reason := events.ErrLeaseExpired
	if a.lastErr != nil || (a.op != nil && a.op.kind == opKeepAlive) {
		reason = events.ErrUnreachable
	}
	if a.lastErr != nil {
		reason = fmt.Errorf("%w: %w", reason, a.lastErr)
	}
	t := a.revoke(reason)
	if a.op != nil && a.op.kind == opKeepAlive {
		a.op.stale = true
		a.op.cancel()
	}
	if a.shared != nil {
		// The shared session lives on: release the lock before trying
		// again, so the next term never reuses this one's token.
		a.releases = append(a.releases, release{term: t, sess: a.sess})
		return
	}
	a.discardSession()
}

// lockLost ends the term in force if its session reports the term's lock
// lost (deleted or evicted behind its back, its lease revoked: a renewal
// confirms every lock of the session), and reports whether it did. The
// campaign then tries again at once, watching the lock: another candidate
// may hold it already.
func (a *actor) lockLost() bool {
	name, tok := a.e.slots[a.term.event.Slot], a.term.event.Token
	if lost, ok := a.sess.Lost()[name]; !ok || lost != tok {
		return false
	}
	a.revoke(fmt.Errorf("%w: the backend no longer holds %s under token %d for this session", events.ErrLockLost, name, tok))
	a.lost, a.tryAt = true, time.Now()
	return true
}

// lose ends the term because the backend lost the session.
func (a *actor) lose(err error) {
	if a.term != nil {
		a.revoke(fmt.Errorf("%w: %w", events.ErrSessionLost, err))
	}
	a.discardSession()
}

// discardSession gives up the session: it is closed in the background
// (bounded by the TTL) and a new one is opened at once. A shared session
// is reported to its owner instead, which renews or replaces it.
func (a *actor) discardSession() {
	s := a.sess
	if s == nil {
		return
	}
	if a.shared != nil {
		a.shared.report(a.gen)
		a.sess = nil
		return
	}
	a.sess, a.losses = nil, nil
	a.openAt = time.Now()
	a.background(func(ctx context.Context) { _ = s.Close(ctx) })
}

// backoff returns the pause before the next try after a failure.
func (a *actor) backoff() time.Duration { return a.cfg.Backoff(a.failures) }

// background runs f in a goroutine the actor waits for, with a context that
// survives Run's but is bounded by the TTL.
func (a *actor) background(f func(ctx context.Context)) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(a.ctx), a.cfg.TTL)
	a.wg.Go(func() {
		defer cancel()
		f(ctx)
	})
}

// resign serves a Resign request: the term ends now, and the lock is
// released once the work bound to it returned.
func (a *actor) resign(req resignReq) {
	if a.term == nil || (req.token != 0 && a.term.event.Token != req.token) {
		req.done <- nil
		return
	}
	t := a.revoke(events.ErrResigned)
	a.releases = append(a.releases, release{term: t, sess: a.sess, reply: req.done})
	a.backoffUntil = time.Now().Add(a.cfg.RetryPause())
}

// shutdown ends the term in force gracefully, waits for the op in flight
// and for the work bound to ended terms, then closes the session, which
// releases its locks, and only then answers pending resignations. Run's
// context may be gone: every call here uses a context bounded by the TTL.
func (a *actor) shutdown(reason error) {
	a.wake.Stop()
	if a.term != nil {
		a.releases = append(a.releases, release{term: a.revoke(reason), sess: a.sess})
	}
	if a.op != nil {
		if a.op.kind != opRelease {
			a.op.cancel()
			a.op.stale = true
		}
		a.finish(<-a.op.done)
	}
	for _, r := range a.releases {
		a.drain(r.term)
	}
	a.stopWatch()
	a.deregister()
	if a.shared != nil {
		a.releaseShared()
		a.sess = nil
	}
	if a.sess != nil {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(a.ctx), a.cfg.TTL)
		_ = a.sess.Close(ctx)
		cancel()
		a.sess = nil
	}
	for _, r := range a.releases {
		if r.reply != nil {
			r.reply <- nil
		}
	}
	a.releases = nil
}

// drain waits, bounded by the grace period and the term's deadline, for the
// work bound to t to return.
func (a *actor) drain(t *term) {
	limit := min(a.cfg.Grace, time.Until(t.deadline))
	timer := time.NewTimer(max(limit, 0))
	defer timer.Stop()
	select {
	case <-t.drained:
	case <-timer.C:
		a.cfg.Logger.Warn("work bound to the term outlived the grace period", "name", a.e.name, "token", t.event.Token)
	}
}
