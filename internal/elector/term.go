package elector

import (
	"context"
	"time"

	"github.com/hustings/hustings/events"
)

// term is one continuous holding of the lock. Work bound to it (WhileLeader)
// takes a hold; a graceful stop waits for the holds to end before release.
// Its context and drained channel are made when first needed, so that a
// term nobody binds work to costs only this struct. event, hook, on, gen
// and span are set once; the rest is guarded by the campaign's mutex
// (e.mu), and final is not written again once set.
type term struct {
	event   events.Event  // the Elected event
	hook    TermHook      // the Config's hooks' view of the term
	on      *Session      // the session whose renewals move the deadline
	gen     uint64        // its generation the term is on
	span    time.Duration // from a renewal's start to the deadline it gives
	ctx     *termContext  // made by the first Term
	cancel  context.CancelFunc
	final   time.Time // the deadline the term had when it ended; zero while in force
	holds   int
	drained chan struct{} // made by the first drain that waits; closed once ended and holds == 0
}

// live returns the term's deadline: span after the start of its session's
// last renewal, and never earlier than the Elected event's. It reads only
// what never changes and the session, so hooks (which may hold locks of
// their own) may call it. The session tells its campaigns of no renewal
// (see Session.renew); whoever reads the deadline gets the last one's.
// Once the session has been replaced it returns the Elected event's.
func (t *term) live() time.Time {
	if r := t.on.renewal(t.gen); !r.IsZero() {
		return later(t.event.Deadline, r.Add(t.span))
	}
	return t.event.Deadline
}

// ended reports whether the term has ended; e.mu held.
func (t *term) ended() bool { return !t.final.IsZero() }

// end ends the term at deadline final and cancels its context; holds taken
// from now on fail. e.mu held.
func (t *term) end(final time.Time) {
	t.final = final
	if t.holds == 0 && t.drained != nil {
		close(t.drained)
	}
	if t.cancel != nil {
		t.cancel()
	}
}

// context returns the term's context, made from parent (whose values it
// keeps, not its cancellation) at the first call; e.mu held.
func (t *term) context(parent context.Context) *termContext {
	if t.ctx == nil {
		inner, cancel := context.WithCancel(context.WithoutCancel(t.hook.Context(parent)))
		t.ctx, t.cancel = &termContext{Context: inner, t: t}, cancel
		if t.ended() {
			cancel()
		}
	}
	return t.ctx
}

// termContext is a term's context: cancelled when the term ends, and
// reporting the term's local deadline, which each renewal moves later.
// Work can pass the deadline on (a gRPC call sends it); a context derived
// from it with a later deadline of its own stays bound to the term, since
// the standard library then relies on the parent's cancellation.
type termContext struct {
	context.Context
	t *term
}

// Deadline returns the term's deadline (term.live) while the term is in
// force, and the one it had when it ended once it has.
func (c *termContext) Deadline() (time.Time, bool) {
	if c.Err() != nil {
		return c.t.final, true // written before the cancellation Err reports
	}
	return c.t.live(), true
}

// Term: see campaign.Campaign.Term, where its doc is kept, once.
func (e *Elector) Term(token events.Token) (ctx context.Context, elected events.Event, done func(), ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.act == nil || e.act.term == nil || (token != 0 && e.act.term.event.Token != token) {
		return nil, events.Event{}, nil, false
	}
	t := e.act.term
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
		if t.ended() && t.holds == 0 && t.drained != nil {
			close(t.drained)
		}
	}
	return t.context(e.act.ctx), t.event, done, true
}

// drainedCh returns a channel closed once t has ended and its work
// returned, or nil if that is so already.
func (e *Elector) drainedCh(t *term) <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	if t.ended() && t.holds == 0 {
		return nil
	}
	if t.drained == nil {
		t.drained = make(chan struct{})
	}
	return t.drained
}
