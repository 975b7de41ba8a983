package elector

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/hustings/hustings/events"
)

// term is one continuous holding of the lock. Work bound to it (WhileLeader)
// takes a hold; a graceful stop waits for the holds to end before release.
// Its context and drained channel are made when first needed, so that a
// term nobody binds work to costs only this struct. Every field but event
// is guarded by the campaign's mutex (e.mu), but for on, gen and span,
// set once.
type term struct {
	event    events.Event // the Elected event
	hook     TermHook     // the Config's hooks' view of the term
	deadline time.Time    // as the campaign last moved it; see live
	on       *Session     // the session whose renewals move the deadline
	gen      uint64       // its generation the term is on
	span     time.Duration
	ctx      *termContext // made by the first Term
	cancel   context.CancelFunc
	ended    bool
	holds    int
	drained  chan struct{} // made by the first drain that waits; closed once ended and holds == 0
}

// newTerm returns the term e began, on generation gen of session on (nil
// for none), whose renewals put the deadline span after their start. Its
// hook is set by the caller.
func newTerm(e events.Event, on *Session, gen uint64, span time.Duration) *term {
	return &term{event: e, hook: noTermHooks, deadline: e.Deadline, on: on, gen: gen, span: span}
}

// sessionDeadline returns the term's deadline as its session's last
// renewal puts it, never earlier than its first; it reads only what never
// changes and the session (for hooks, which may hold locks of their own).
func (t *term) sessionDeadline() time.Time { return t.live(t.event.Deadline) }

// live returns the later of d, the deadline the campaign last set, and
// the deadline the session's last renewal gives the term. The session
// does not tell its campaigns of a renewal (that would cost every
// campaign work at every tick: see Session.renew); a campaign takes the
// renewal in when its deadline alarm goes off (expireIfDue), and
// whoever reads the deadline meanwhile gets the renewal's.
func (t *term) live(d time.Time) time.Time {
	if t.on == nil {
		return d
	}
	if r := t.on.renewal(t.gen); !r.IsZero() {
		return later(d, r.Add(t.span))
	}
	return d
}

// context returns the term's context, made under e.mu from parent (whose
// values it keeps, not its cancellation) at the first call.
func (t *term) context(parent context.Context) *termContext {
	if t.ctx == nil {
		inner, cancel := context.WithCancel(context.WithoutCancel(t.hook.Context(parent)))
		t.ctx, t.cancel = &termContext{Context: inner, t: t}, cancel
		d := t.deadline
		t.ctx.deadline.Store(&d)
		if t.ended {
			cancel()
		}
	}
	return t.ctx
}

// setDeadline moves the term's deadline (after a renewal); e.mu held.
func (t *term) setDeadline(d time.Time) {
	t.deadline = d
	if t.ctx != nil {
		t.ctx.deadline.Store(&d)
	}
}

// termContext is a term's context: cancelled when the term ends, and
// reporting the term's local deadline, which each renewal moves later.
// Work can pass the deadline on (a gRPC call sends it); a context derived
// from it with a later deadline of its own stays bound to the term, since
// the standard library then relies on the parent's cancellation.
type termContext struct {
	context.Context
	t        *term
	deadline atomic.Pointer[time.Time]
}

// Deadline returns the term's deadline as its session's last renewal puts
// it (term.live) while the term is in force, and the last one it had once
// it has ended.
func (c *termContext) Deadline() (time.Time, bool) {
	d := *c.deadline.Load()
	if c.Err() != nil {
		return d, true
	}
	return c.t.live(d), true
}

// Term: see campaign.Campaign.Term, where its doc is kept, once.
func (e *Elector) Term(token events.Token) (ctx context.Context, elected events.Event, done func(), ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t := e.current
	if t == nil || t.ended || (token != 0 && t.event.Token != token) {
		return nil, events.Event{}, nil, false
	}
	t.holds++
	released := false
	worked := t.hook.Work()
	done = func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		if released {
			return
		}
		released = true
		worked()
		t.holds--
		if t.ended && t.holds == 0 && t.drained != nil {
			close(t.drained)
		}
	}
	return t.context(e.act.ctx), t.event, done, true
}

// end marks t ended and cancels its context; holds taken from now on fail.
func (e *Elector) end(t *term) {
	e.mu.Lock()
	t.ended = true
	if e.current == t {
		e.current = nil
	}
	if t.holds == 0 && t.drained != nil {
		close(t.drained)
	}
	cancel := t.cancel
	e.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// drainedCh returns a channel closed once t has ended and its work
// returned, or nil if that is so already.
func (e *Elector) drainedCh(t *term) <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	if t.ended && t.holds == 0 {
		return nil
	}
	if t.drained == nil {
		t.drained = make(chan struct{})
	}
	return t.drained
}

// deadlineOf returns t's deadline, as the campaign last set it.
func (e *Elector) deadlineOf(t *term) time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return t.deadline
}
