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

// actor is the state of one running campaign: a state machine with no
// goroutine of its own. Everything that happens to it — a backend call's
// result, a timer, a watch signal, a renewal of its session, a Resign, a
// stop — is a callback that takes its lock, changes its state (do, done),
// and starts whatever is then due (settle). Backend calls run one at a
// time in goroutines taken from the session's turns (ops), so a hanging
// backend never holds up the deadline, the events or a stop. A held
// campaign is this struct and its term: no goroutine.
type actor struct {
	mu  sync.Mutex
	e   *Elector
	cfg *Config
	ctx context.Context // Run's, or Background for a campaign started on a session

	on   onSession // the session and what the campaign knows of it
	term *term     // the term in force, nil if none
	op   *op       // the backend call in flight, nil if none
	at   schedule  // when each kind of call is next due, and why
	fail failures

	releases []release // resignations waiting for the op slot
	doubt    []string  // locks the session may hold or wait for untold (see disown)
	wait     waiting   // what it knows of the lock while it waits: its watch, what the last try found
	gate     *gate     // the strategy's gate, nil without one
	audit    audit     // checks for duplicate IDs and disagreeing slot counts

	end    ending
	alarms struct{ wake, deadline, flush alarm }
	wg     sync.WaitGroup // every goroutine the actor starts
}

// onSession is the session a campaign runs on, as the campaign last saw it.
type onSession struct {
	*Session
	private bool             // made for this campaign alone: closed with it
	sess    backends.Session // the backend session in use; nil while there is none
	gen     uint64           // its generation
	renewed time.Time        // start of its last successful Open or KeepAlive
}

// schedule holds when each call is next due, and the flags that move them.
type schedule struct {
	try, notBefore, release time.Time     // acquire; none before (after Resign); release retry
	leave                   time.Time     // no disowning of the locks in doubt before this (after one that left some)
	renewWanted             bool          // elect found the deadline spent: try again after a renewal
	flushWait               time.Duration // the events flush's current pause
}

// failures counts backend failures in a row, for the backoff, and keeps
// the last one.
type failures struct {
	last error
	n    int
}

// ending is how the campaign stops: once reason is set nothing new starts;
// the call in flight is awaited, then finish runs.
type ending struct {
	reason   error // the Revoked reason of a term ended by the stop
	err      error // what Run returns
	gone     bool  // the session is stopping: leave
	fatal    error // a backend error that no retry can cure
	finished bool  // finish is running
	stopCtx  func() bool
	result   chan error // Run's error, once finished (buffer 1)
}

func newActor(e *Elector, ctx context.Context, s *Session, private bool) *actor {
	a := &actor{e: e, cfg: &e.cfg, gate: e.gate, ctx: ctx, on: onSession{Session: s, private: private}}
	a.alarms.wake.f = func() { a.do(func() {}) }
	a.alarms.deadline.f = func() { a.do(a.expireIfDue) }
	a.alarms.flush.f = func() { a.do(func() {}) }
	return a
}

// begin starts the campaign: it follows ctx and its session from now on.
func (a *actor) begin() {
	a.do(a.adopt)
	a.mu.Lock() // a ctx that has ended calls at once, and waits for this
	defer a.mu.Unlock()
	if a.end.reason != nil {
		return // closed already
	}
	if a.ctx.Done() == nil {
		a.end.stopCtx = func() bool { return true } // a ctx that never ends
		return
	}
	a.end.stopCtx = context.AfterFunc(a.ctx, func() {
		a.do(func() { a.stop(events.ErrCanceled, a.ctx.Err()) })
	})
}

// do runs f on the actor's state, then settles. It does nothing and
// returns false once the campaign is stopping.
func (a *actor) do(f func()) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.end.reason != nil {
		return false
	}
	f()
	a.settle()
	return true
}

// settle follows up every change: the campaign stops if its session is
// gone or a fatal error came; otherwise whatever is due starts. Events go
// out, and once a stop has no call left in flight, finish runs.
func (a *actor) settle() {
	switch {
	case a.end.reason != nil:
	case a.end.gone:
		a.stop(events.ErrResigned, ErrClosed)
	case a.end.fatal != nil:
		a.stop(events.ErrSessionLost, a.end.fatal)
	default:
		a.startDue()
	}
	a.flushEvents()
	if a.end.reason != nil && a.op == nil && !a.end.finished {
		a.end.finished = true
		go a.finish()
	}
}

// startDue starts the backend call that is due, if the op slot is free,
// or arms the wake alarm once, for the earliest of the calls not yet due.
func (a *actor) startDue() {
	if a.op != nil {
		return
	}
	w := waker{now: time.Now(), next: never}
	defer w.arm(&a.alarms.wake)
	if len(a.releases) > 0 && w.due(a.at.release) {
		a.startRelease()
		return
	}
	if a.on.sess == nil {
		return // a session arrives through adopt
	}
	switch {
	case a.gate != nil && !a.gate.registered && w.due(a.gate.registerAt):
		a.startRegister()
	case a.term != nil && len(a.doubt) > 0 && w.due(a.at.leave):
		a.startLeave() // after the Elected: the lines of the other slots are left
	case a.term == nil && !a.audit.at.IsZero() && w.due(a.audit.at):
		a.startAudit()
	case a.term == nil && len(a.releases) == 0 && w.due(later(a.at.try, a.at.notBefore)) && a.startTry(&w):
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
	case g != nil && !g.eligible(w.now) && len(a.doubt) > 0 && w.due(a.at.leave):
		a.startLeave()
	case g != nil && !g.eligible(w.now):
		next := g.rankedAt.Add(a.cfg.RetryPause())
		if !g.freeSince.IsZero() {
			next = earlier(next, g.freeSince.Add(g.patience))
		}
		a.at.try, g.fresh = next, false
		w.due(next)
		return false
	case a.on.orphaned(a.e.slots):
		a.at.try = w.now.Add(a.cfg.RetryPause()) // an earlier release of ours is pending
		w.due(a.at.try)
		return false
	default:
		a.startAcquire()
	}
	return true
}

// elect starts a term with the token the backend confirmed.
func (a *actor) elect(slot int, token events.Token) {
	now := time.Now()
	deadline := a.lastRenewal().Add(a.cfg.TTL - a.cfg.MarginFor(a.cfg.TTL))
	if !deadline.After(now) {
		// The session is about to run out: renew first, then acquire again
		// (the same session gets the same token back). The lock stays in
		// doubt meanwhile: a group's next try may win another slot first,
		// and must then disown this one, not keep it for nobody.
		a.doubt = inDoubt(a.doubt, a.e.slots[slot])
		a.at.renewWanted, a.at.try = true, now.Add(a.cfg.RetryPause())
		a.on.report(a.on.gen)
		return
	}
	e := events.Event{Kind: events.Elected, Name: a.e.name, Slot: slot, Token: token, Holder: a.cfg.ID, Time: now, Deadline: deadline}
	t := newTerm(e, a.on.Session, a.on.gen, a.cfg.TTL-a.cfg.MarginFor(a.cfg.TTL))
	t.hook = a.cfg.Hooks.Term(a.ctx, e, a.e.label, a.cfg.TTL, a.on.cfg.Hooks, t.sessionDeadline)
	a.term, a.audit, a.wait.lost = t, audit{}, false
	a.armDeadline(deadline)
	a.wait.watch.Stop()
	a.e.mu.Lock()
	a.e.current = t
	a.e.state.Leader, a.e.state.Slot, a.e.state.Token = true, slot, token
	a.e.state.Deadline, a.e.state.LastEvent = deadline, e
	a.e.state.Err = a.fail.last // an audit's finding, if any, is past
	elected := a.e.elected
	a.e.mu.Unlock()
	a.cfg.Observer.TermStarted(a.e.name, a.e.label)
	a.cfg.Logger.Info("elected", "name", a.e.name, "slot", slot, "id", a.cfg.ID, "token", token, "deadline", deadline)
	a.e.publish(e)
	if elected != nil {
		select {
		case elected <- struct{}{}:
		default:
		}
	}
}

// revoke ends the term in force: its context is cancelled and Revoked is
// published, in that order and at once.
func (a *actor) revoke(reason error) *term {
	t := a.term
	a.term = nil
	a.alarms.deadline.stop()
	e := t.event
	e.Kind, e.Time, e.Deadline, e.Reason = events.Revoked, time.Now(), t.live(a.e.deadlineOf(t)), reason
	// State stops reporting leadership before the term's context is
	// cancelled: whoever sees the cancellation and reads State sees no term.
	a.e.setState(func(s *State) {
		s.Leader, s.LastEvent = false, e
	})
	a.e.end(t)
	// Metrics and logs first: whoever reads the event may look at them.
	a.cfg.Observer.TermEnded(a.e.name, a.e.label, ReasonCode(reason))
	t.hook.Ended(e)
	level := slog.LevelWarn
	if errors.Is(reason, events.ErrResigned) || errors.Is(reason, events.ErrCanceled) {
		level = slog.LevelInfo
	}
	a.cfg.Logger.Log(context.Background(), level, "revoked", "name", a.e.name, "id", a.cfg.ID, "slot", e.Slot, "token", e.Token, "reason", reason)
	a.e.publish(e)
	return t
}

// lockLost ends the term in force if its session reports the term's lock
// lost (deleted or evicted behind its back, its lease revoked: a renewal
// confirms every lock of the session), and reports whether it did. The
// campaign then tries again at once, watching the lock: another candidate
// may hold it already.
func (a *actor) lockLost() bool {
	name, tok := a.e.slots[a.term.event.Slot], a.term.event.Token
	if lost, ok := a.on.sess.Lost()[name]; !ok || lost != tok {
		return false
	}
	a.revoke(fmt.Errorf("%w: the backend no longer holds %s under token %d for this session", events.ErrLockLost, name, tok))
	a.wait.lost, a.at.try = true, time.Now()
	return true
}

// lose ends the term because the backend lost the session, and reports it
// to the session, which renews or replaces it.
func (a *actor) lose(err error) {
	if a.term != nil {
		a.revoke(fmt.Errorf("%w: %w", events.ErrSessionLost, err))
	}
	if a.on.sess != nil {
		a.on.report(a.on.gen)
		a.on.sess = nil
	}
}

// backoff returns the pause before the next try after a failure.
func (a *actor) backoff() time.Duration { return a.cfg.Backoff(a.fail.n) }

// background runs f in a goroutine the actor waits for, with a context that
// survives Run's but is bounded by the TTL.
func (a *actor) background(f func(ctx context.Context)) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(a.ctx), a.cfg.TTL)
	a.wg.Go(func() {
		defer cancel()
		f(ctx)
	})
}

// flushEvents offers the Events subscriber what it is owed, without
// blocking: the stream's buffer holds one event, and a reader that has not
// taken it yet gets the next at a later settle. While something waits, the
// flush alarm brings one, at growing pauses (1 ms up to 100 ms) so that a
// campaign whose events nobody reads costs nothing.
func (a *actor) flushEvents() {
	out := a.e.out
	for {
		ch, ev := out.Ready()
		if ch == nil {
			if a.at.flushWait > 0 {
				a.alarms.flush.stop()
				a.at.flushWait = 0
			}
			return
		}
		select {
		case ch <- ev:
			out.Sent()
			continue
		default:
		}
		a.at.flushWait = min(max(2*a.at.flushWait, time.Millisecond), 100*time.Millisecond)
		a.alarms.flush.set(a.at.flushWait)
		return
	}
}

// failed records a backend failure.
func (a *actor) failed(what string, err error) {
	a.fail.last = err
	a.fail.n++
	a.e.setState(func(s *State) { s.Err = err })
	attrs := []any{"name", a.e.name, "id", a.cfg.ID, "err", err}
	if a.term != nil {
		attrs = append(attrs, "slot", a.term.event.Slot, "token", a.term.event.Token, "deadline", a.e.deadlineOf(a.term))
	}
	a.cfg.Logger.Warn(what+" failed", attrs...)
}

// succeed clears the last failure and the backoff.
func (a *actor) succeed() {
	a.fail.n = 0
	a.clearErr()
}

// clearErr clears the last failure but not the backoff: a renewal that
// works says nothing of the calls that failed.
func (a *actor) clearErr() {
	if a.fail.last != nil {
		a.fail.last = nil
		a.e.setState(func(s *State) { s.Err = a.audit.err }) // a misconfiguration stays shown
	}
}
