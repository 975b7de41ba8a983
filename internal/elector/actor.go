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
// result, its alarm, a watch signal, a renewal of its session, a Resign, a
// stop — is a callback that takes the campaign's lock (e.mu), changes its
// state (do, done), and starts whatever is then due (settle). Backend calls
// run one at a time in goroutines taken from the session's turns (ops), so
// a hanging backend never holds up the deadline, the events or a stop. A
// held campaign is this struct and its term: no goroutine.
type actor struct {
	e   *Elector
	ctx context.Context // Run's, or Background for a campaign started on a session

	on   onSession // the session and what the campaign knows of it
	term *term     // the term in force, nil if none
	op   *op       // the backend call in flight, nil if none
	at   schedule  // when the calls that have no other owner of their time are next due
	fail failures

	releases []release // resignations waiting for the op slot
	doubt    []string  // locks the session may hold or wait for untold (see disown)
	wait     waiting   // what it knows of the lock while it waits: its watch, what the last try found
	gate     *gate     // the strategy's gate, nil without one
	audit    audit     // checks for duplicate IDs and disagreeing slot counts

	end   ending
	alarm alarm          // set for the earliest time something is due (settle)
	wg    sync.WaitGroup // every goroutine the actor starts
}

// onSession is the session a campaign runs on, as the campaign last saw it.
type onSession struct {
	*Session
	sess    backends.Session // the backend session in use; nil while there is none
	gen     uint64           // its generation
	renewed time.Time        // start of its last successful Open or KeepAlive
}

// schedule holds when the calls whose time nothing else gives are due.
type schedule struct {
	try       time.Time // the next acquire (or what it needs first: a watch, a rank)
	notBefore time.Time // no acquire before this (after a Resign)
	release   time.Time // the retry of a failed release
	disown    time.Time // no disowning of the locks in doubt before this (after one that left some)
}

// failures counts the campaign's backend calls that failed in a row, for
// the backoff, and keeps the last one's error.
type failures struct {
	last error
	n    int
}

// phase is how far a campaign is on its way: running, then stopping
// (nothing new starts; the call in flight is awaited), finishing (finish
// runs), finished (Run has returned).
type phase uint8

const (
	running phase = iota
	stopping
	finishing
	finished
)

// ending is how the campaign stops.
type ending struct {
	phase   phase
	err     error       // what Run returns, once stopping
	stopCtx func() bool // ends the watch of Run's context
}

func newActor(e *Elector, ctx context.Context, s *Session) *actor {
	a := &actor{e: e, gate: e.gate, ctx: ctx, on: onSession{Session: s}}
	a.alarm.f = func() { a.do(func() {}) }
	return a
}

// cfg returns the campaign's configuration.
func (a *actor) cfg() *Config { return &a.e.cfg }

// private reports whether the session was made for this campaign alone,
// and is closed with it.
func (a *actor) private() bool { return a.e.cfg.Session == nil }

// begin starts the campaign: it follows ctx and its session from now on.
func (a *actor) begin() {
	a.do(a.adopt)
	a.e.mu.Lock() // a ctx that has ended calls at once, and waits for this
	defer a.e.mu.Unlock()
	if a.end.phase != running {
		return // closed already
	}
	if a.ctx.Done() == nil {
		a.end.stopCtx = func() bool { return true } // a ctx that never ends
		return
	}
	a.end.stopCtx = context.AfterFunc(a.ctx, func() {
		a.do(func() { a.stop(fmt.Errorf("%w: %w", events.ErrResigned, a.ctx.Err()), a.ctx.Err()) })
	})
}

// do runs f on the actor's state, then settles. It does nothing and
// returns false once the campaign is stopping.
func (a *actor) do(f func()) bool {
	a.e.mu.Lock()
	defer a.e.mu.Unlock()
	if a.end.phase != running {
		return false
	}
	f()
	a.settle()
	return true
}

// settle follows up every change: the term ends if its deadline has come;
// whatever call is due starts; events go out; the alarm is set for the
// earliest time something else is due. Once a stop has no call left in
// flight, finish runs.
func (a *actor) settle() {
	now := time.Now()
	next := never
	if a.end.phase == running {
		next = earlier(a.expireIfDue(now), a.startDue(now))
	}
	next = earlier(next, a.flushEvents(now))
	if next.Equal(never) {
		a.alarm.stop()
	} else {
		a.alarm.set(next.Sub(now))
	}
	if a.end.phase == stopping && a.op == nil {
		a.end.phase = finishing
		go a.finish()
	}
}

// elect starts a term with the token the backend confirmed.
func (a *actor) elect(slot int, token events.Token) {
	cfg := a.cfg()
	now := time.Now()
	span := cfg.TTL - cfg.MarginFor(cfg.TTL)
	deadline := a.lastRenewal().Add(span)
	if !deadline.After(now) {
		// The session is about to run out: renew first, then acquire again
		// (the same session gets the same token back). The lock stays in
		// doubt meanwhile: a group's next try may win another slot first,
		// and must then disown this one, not keep it for nobody.
		a.doubt = inDoubt(a.doubt, a.e.slots[slot])
		a.at.try = now.Add(cfg.RetryPause())
		a.on.report(a.on.gen)
		return
	}
	e := events.Event{Kind: events.Elected, Name: a.e.name, Slot: slot, Token: token, Holder: cfg.ID, Time: now, Deadline: deadline}
	t := &term{event: e, hook: noTermHooks, on: a.on.Session, gen: a.on.gen, span: span}
	t.hook = cfg.Hooks.Term(a.ctx, e, a.e.label, cfg.TTL, a.on.cfg.Hooks, t.live)
	a.term, a.audit, a.at.try = t, audit{}, now // tries are due again once it ends
	a.wait.watch.Stop()
	cfg.Logger.Info("elected", "name", a.e.name, "slot", slot, "id", cfg.ID, "token", token, "deadline", deadline)
	a.e.publish(e)
	if a.e.elected != nil {
		select {
		case a.e.elected <- struct{}{}:
		default:
		}
	}
}

// revoke ends the term in force: its context is cancelled and Revoked is
// published, in that order and at once.
func (a *actor) revoke(reason error) *term {
	cfg := a.cfg()
	t := a.term
	a.term = nil // State reports no term before the term's context is cancelled
	e := t.event
	e.Kind, e.Time, e.Deadline, e.Reason = events.Revoked, time.Now(), t.live(), reason
	t.end(e.Deadline)
	// Hooks (metrics) and logs first: whoever reads the event may look at them.
	t.hook.Ended(e)
	level := slog.LevelWarn
	if errors.Is(reason, events.ErrResigned) {
		level = slog.LevelInfo
	}
	cfg.Logger.Log(context.Background(), level, "revoked", "name", a.e.name, "id", cfg.ID, "slot", e.Slot, "token", e.Token, "reason", reason)
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
	a.lost()
	a.at.try = time.Now()
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

// background runs f in a goroutine the actor waits for, with a context that
// survives Run's but is bounded by the TTL.
func (a *actor) background(f func(ctx context.Context)) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(a.ctx), a.cfg().TTL)
	a.wg.Go(func() {
		defer cancel()
		f(ctx)
	})
}

// flushEvents offers the Events subscriber what it is owed, without
// blocking, and returns when to offer again: never if nothing waits. The
// stream's buffer holds one event, and a reader that has not taken it yet
// is offered the next at a later settle, after a pause as long as the
// event has waited (from 1 ms up to 100 ms), so that a campaign whose
// events nobody reads costs nothing.
func (a *actor) flushEvents(now time.Time) time.Time {
	out := a.e.out
	for {
		ch, ev := out.Ready()
		if ch == nil {
			return never
		}
		select {
		case ch <- ev:
			out.Sent()
			continue
		default:
		}
		return now.Add(min(max(now.Sub(ev.Time), time.Millisecond), 100*time.Millisecond))
	}
}

// err returns the error State reports: the last failure of the
// campaign's calls or of its session's keep-alive, else what the last
// audit found.
func (a *actor) err() error {
	if a.fail.last != nil {
		return a.fail.last
	}
	if _, failing := a.on.health(); failing != nil {
		return failing
	}
	return a.audit.err
}

// failed records a backend failure.
func (a *actor) failed(what string, err error) {
	cfg := a.cfg()
	a.fail.last = err
	a.fail.n++
	attrs := []any{"name", a.e.name, "id", cfg.ID, "err", err}
	if a.term != nil {
		attrs = append(attrs, "slot", a.term.event.Slot, "token", a.term.event.Token, "deadline", a.term.live())
	}
	cfg.Logger.Warn(what+" failed", attrs...)
}

// succeed clears the last failure and the backoff.
func (a *actor) succeed() {
	a.fail = failures{}
}

// backoff returns the pause before the next try after a failure.
func (a *actor) backoff() time.Duration { return a.cfg().Backoff(a.fail.n) }
