package elector

import (
	"context"
	"time"

	"github.com/hustings/hustings/events"
)

// Hook is told who did what: which campaign started, how each try for a
// lock ended, each term with its token and deadline, each keep-alive of
// the session whose Config holds it, each one-shot run with its outcome.
// Package ops builds its metrics, health checks, leader gauge and traces
// on it. A Config holds any number of hooks (see Hooks). Every
// method is called from the campaigns' goroutines, a campaign's under its
// lock: it must not block, nor call the campaign's methods, and must be
// safe for concurrent use.
type Hook interface {
	// Campaign: a campaign or group for name began to run.
	Campaign(name, backend string)
	// Try: a try for the lock name ended, with NoReason when the backend
	// confirmed the lock, else why not (for a one-shot run whose backend
	// failed, what its failure mode made of it). A one-shot run that waits
	// is one try, whatever it asked meanwhile.
	Try(name, backend string, why Reason)
	// Term: a term began; e is its Elected event, ttl its session's TTL,
	// ctx the campaign's Run context, session the hooks of the session it
	// is on, which hear that session's keep-alives (the campaign's own
	// Hooks when the session is its private one), and deadline reads the
	// term's deadline as its session's last renewal puts it (a renewal
	// tells no campaign or hook; deadline takes only the session's lock).
	// The TermHook hears the rest of it.
	Term(ctx context.Context, e events.Event, backend string, ttl time.Duration, session Hooks, deadline func() time.Time) TermHook
	// KeepAlive: a renewal of the session whose Config holds the hook
	// took d and returned err (nil when it succeeded).
	KeepAlive(backend string, d time.Duration, err error)
	// Run: a one-shot run of name began under the caller's ctx. The
	// RunHook hears the rest of it.
	Run(ctx context.Context, name, backend, id string) RunHook
}

// TermHook hears what becomes of one term. Work may be called from
// several goroutines at once; Ended is called once, last but for the done
// functions of work still running.
type TermHook interface {
	// Context returns the parent of the term's context, made from ctx
	// (to carry a trace span, say).
	Context(ctx context.Context) context.Context
	// Work: work bound to the term began (WhileLeader, Campaign.Term);
	// done is called when it returns.
	Work() (done func())
	// Ended: the term was revoked; e is its Revoked event.
	Ended(e events.Event)
}

// RunHook hears what becomes of one one-shot run.
type RunHook interface {
	// Context returns the context the run goes on under, made from the
	// caller's ctx.
	Context(ctx context.Context) context.Context
	// Work: fn is about to run under the lock (slot, token) until
	// deadline; done is called when it returns.
	Work(slot int, token events.Token, deadline time.Time) (done func())
	// Ended: the run ended; outcome is "succeeded", "skipped" or
	// "action-failed", or "" when the run returned err undecided or fn
	// panicked.
	Ended(outcome string, err error)
}

// NopHook is the part of a Hook a hook does not need: embedded, it
// hears Campaign, Try and KeepAlive and does nothing, and its Run hears
// nothing of the run (NopRun). The embedding type writes Term.
type NopHook struct{}

// Campaign does nothing.
func (NopHook) Campaign(string, string) {}

// Try does nothing.
func (NopHook) Try(string, string, Reason) {}

// KeepAlive does nothing.
func (NopHook) KeepAlive(string, time.Duration, error) {}

// Run returns NopRun.
func (NopHook) Run(context.Context, string, string, string) RunHook { return NopRun{} }

// NopRun is a RunHook that hears nothing.
type NopRun struct{}

// Context returns ctx.
func (NopRun) Context(ctx context.Context) context.Context { return ctx }

// Work returns a done that does nothing.
func (NopRun) Work(int, events.Token, time.Time) func() { return func() {} }

// Ended does nothing.
func (NopRun) Ended(string, error) {}

// Hooks is the Config's list of hooks, called in order; a nil list costs
// nothing.
type Hooks []Hook

// Campaign tells every hook that a campaign began to run.
func (hs Hooks) Campaign(name, backend string) {
	for _, h := range hs {
		h.Campaign(name, backend)
	}
}

// Term tells every hook that a term began.
func (hs Hooks) Term(ctx context.Context, e events.Event, backend string, ttl time.Duration, session Hooks, deadline func() time.Time) TermHook {
	if len(hs) == 0 {
		return noTermHooks
	}
	ts := make(termHooks, len(hs))
	for i, h := range hs {
		ts[i] = h.Term(ctx, e, backend, ttl, session, deadline)
	}
	return ts
}

// Try tells every hook how a try ended.
func (hs Hooks) Try(name, backend string, why Reason) {
	for _, h := range hs {
		h.Try(name, backend, why)
	}
}

// KeepAlive tells every hook how a renewal went.
func (hs Hooks) KeepAlive(backend string, d time.Duration, err error) {
	for _, h := range hs {
		h.KeepAlive(backend, d, err)
	}
}

// Run tells every hook that a one-shot run began; the RunHook returned
// is never nil.
func (hs Hooks) Run(ctx context.Context, name, backend, id string) RunHook {
	if len(hs) == 0 {
		return noRunHooks
	}
	rs := make(runHooks, len(hs))
	for i, h := range hs {
		rs[i] = h.Run(ctx, name, backend, id)
	}
	return rs
}

type termHooks []TermHook

// noTermHooks is the TermHook of a term no hook hears: an interface
// holding a nil slice, which costs no allocation.
var noTermHooks TermHook = termHooks(nil)

func (ts termHooks) Context(ctx context.Context) context.Context {
	for _, t := range ts {
		ctx = t.Context(ctx)
	}
	return ctx
}

func (ts termHooks) Work() func() { return works(ts, TermHook.Work) }

func (ts termHooks) Ended(e events.Event) {
	for _, t := range ts {
		t.Ended(e)
	}
}

type runHooks []RunHook

// noRunHooks is the RunHook of a run no hook hears, free like noTermHooks.
var noRunHooks RunHook = runHooks(nil)

func (rs runHooks) Context(ctx context.Context) context.Context {
	for _, r := range rs {
		ctx = r.Context(ctx)
	}
	return ctx
}

func (rs runHooks) Work(slot int, token events.Token, deadline time.Time) func() {
	return works(rs, func(r RunHook) func() { return r.Work(slot, token, deadline) })
}

func (rs runHooks) Ended(outcome string, err error) {
	for _, r := range rs {
		r.Ended(outcome, err)
	}
}

// works calls work for each hook and returns a function that calls every
// done function they returned, in order.
func works[H any](hs []H, work func(H) func()) func() {
	if len(hs) == 0 {
		return nop
	}
	dones := make([]func(), len(hs))
	for i, h := range hs {
		dones[i] = work(h)
	}
	return func() {
		for _, d := range dones {
			d()
		}
	}
}

func nop() {}
