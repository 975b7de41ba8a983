package ops

import (
	"context"
	"fmt"
	"time"

	"github.com/hustings/hustings/events"
)

// healthTerm is what Health knows of one term; every field past the
// constants is guarded by h.mu.
type healthTerm struct {
	h        *Health
	name     string
	slot     int
	token    events.Token
	id       string // the candidate
	backend  string // its backend's label
	ttl      time.Duration
	on       *healthHook      // h's hook of the term's session, which hears its keep-alives; nil if none
	deadline func() time.Time // the term's, as its session's last renewal puts it

	ended time.Time // zero while in force
	work  int       // work bound to the term, running
}

// lock names the term's lock, with its slot in a group.
func (t *healthTerm) lock() string {
	if t.slot == 0 {
		return fmt.Sprintf("%q", t.name)
	}
	return fmt.Sprintf("%q slot %d", t.name, t.slot)
}

func (t *healthTerm) Context(ctx context.Context) context.Context { return ctx }

func (t *healthTerm) Work() func() {
	t.h.mu.Lock()
	t.work++
	t.h.mu.Unlock()
	return func() {
		t.h.mu.Lock()
		defer t.h.mu.Unlock()
		t.work--
		t.forgetIfDone()
	}
}

func (t *healthTerm) Ended(e events.Event) {
	t.h.mu.Lock()
	defer t.h.mu.Unlock()
	t.ended = e.Time
	t.forgetIfDone()
}

// forgetIfDone drops a term that ended and whose work returned; h.mu held.
func (t *healthTerm) forgetIfDone() {
	if !t.ended.IsZero() && t.work == 0 {
		delete(t.h.terms, t)
	}
}

// healthRunHook hears one one-shot run for a Health.
type healthRunHook struct {
	h    *Health
	name string
}

// healthRun is a one-shot function running under its lock.
type healthRun struct {
	name     string
	token    events.Token
	deadline time.Time
}

func (k healthRunHook) Context(ctx context.Context) context.Context { return ctx }

func (k healthRunHook) Work(slot int, token events.Token, deadline time.Time) func() {
	r := &healthRun{name: k.name, token: token, deadline: deadline}
	k.h.mu.Lock()
	k.h.runs[r] = struct{}{}
	k.h.mu.Unlock()
	return func() {
		k.h.mu.Lock()
		delete(k.h.runs, r)
		k.h.mu.Unlock()
	}
}

func (healthRunHook) Ended(string, error) {}
