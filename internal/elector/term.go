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
// is guarded by the campaign's mutex (e.mu).
type term struct {
	event    events.Event // the Elected event
	hook     TermHook     // the Config's hooks' view of the term
	deadline time.Time
	ctx      *termContext // made by the first Term
	cancel   context.CancelFunc
	ended    bool
	holds    int
	drained  chan struct{} // made by the first drain that waits; closed once ended and holds == 0
}

func newTerm(e events.Event, hook TermHook) *term {
	return &term{event: e, hook: hook, deadline: e.Deadline}
}

// context returns the term's context, made under e.mu from parent (whose
// values it keeps, not its cancellation) at the first call.
func (t *term) context(parent context.Context) *termContext {
	if t.ctx == nil {
		inner, cancel := context.WithCancel(context.WithoutCancel(t.hook.Context(parent)))
		t.ctx, t.cancel = &termContext{Context: inner}, cancel
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
	deadline atomic.Pointer[time.Time]
}

func (c *termContext) Deadline() (time.Time, bool) { return *c.deadline.Load(), true }

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

// deadlineOf returns t's deadline.
func (e *Elector) deadlineOf(t *term) time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return t.deadline
}
