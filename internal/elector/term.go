package elector

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/hustings/hustings/events"
)

// term is one continuous holding of the lock. Work bound to it (WhileLeader)
// takes a hold; a graceful stop waits for the holds to end before release.
// ended, holds and drained are guarded by the campaign's mutex.
type term struct {
	event    events.Event // the Elected event
	deadline time.Time    // owned by the actor; ctx reports a copy
	ctx      *termContext
	cancel   context.CancelFunc
	ended    bool
	holds    int
	drained  chan struct{} // closed once ended and holds == 0
}

func newTerm(parent context.Context, e events.Event) *term {
	inner, cancel := context.WithCancel(context.WithoutCancel(parent))
	ctx := &termContext{Context: inner}
	ctx.deadline.Store(&e.Deadline)
	return &term{event: e, deadline: e.Deadline, ctx: ctx, cancel: cancel, drained: make(chan struct{})}
}

// setDeadline moves the term's deadline (after a renewal).
func (t *term) setDeadline(d time.Time) {
	t.deadline = d
	t.ctx.deadline.Store(&d)
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
	done = func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		if released {
			return
		}
		released = true
		t.holds--
		if t.ended && t.holds == 0 {
			close(t.drained)
		}
	}
	return t.ctx, t.event, done, true
}

// end marks t ended and cancels its context; holds taken from now on fail.
func (e *Elector) end(t *term) {
	e.mu.Lock()
	t.ended = true
	if e.current == t {
		e.current = nil
	}
	if t.holds == 0 {
		close(t.drained)
	}
	e.mu.Unlock()
	t.cancel()
}
