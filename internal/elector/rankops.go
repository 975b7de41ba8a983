package elector

import (
	"context"
	"errors"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/strategy"
)

// registry returns where the gate lists and registers the candidates: the
// Registry given (WithRegistry), else the backend and the current session.
func (a *actor) registry() Registry {
	if a.gate.own != nil {
		return a.gate.own
	}
	return backendRegistry{a.e.backend, a.on.sess}
}

// backendRegistry is the backend's own registry: it lists a group's
// entries through the Backend, and keeps this candidate's through its
// session, with which the entry ends.
type backendRegistry struct {
	b backends.Backend
	s backends.Session
}

func (r backendRegistry) Members(ctx context.Context, group string) ([]strategy.Candidate, error) {
	return r.b.Members(ctx, group)
}

func (r backendRegistry) Register(ctx context.Context, group string, c strategy.Candidate) (strategy.Candidate, error) {
	return r.s.Register(ctx, group, c)
}

func (r backendRegistry) Deregister(ctx context.Context, group string) error {
	return r.s.Deregister(ctx, group)
}

// startRegister puts this candidate's entry in the group's registry.
func (a *actor) startRegister() {
	r, me, name := a.registry(), a.e.entry(), a.e.name
	a.call(opRegister, nil, func(ctx context.Context, sent error) outcome {
		err := sent
		if sent == nil {
			_, err = r.Register(ctx, name, me)
		}
		return outcome{apply: func() { a.registeredResult(err) }}
	})
}

func (a *actor) registeredResult(err error) {
	switch {
	case err == nil:
		a.succeed()
		a.gate.registered = true
	case errors.Is(err, backends.ErrSessionLost), errors.Is(err, backends.ErrSessionClosed):
		a.failed("register", err)
		a.lose(err)
	default:
		a.failed("register", err)
		a.gate.registerAt = time.Now().Add(a.backoff())
	}
}

// deregister takes this candidate out of a registry that is not the
// backend's when the campaign ends; the backend's own entries end with the
// session.
func (a *actor) deregister() {
	if a.gate == nil || a.gate.own == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(a.ctx), a.cfg().TTL)
	defer cancel()
	if err := a.gate.own.Deregister(ctx, a.e.name); err != nil {
		a.cfg().Logger.Warn("deregister failed", "name", a.e.name, "err", err)
	}
}

// startRank reads the registry and the slot holders for the gate.
func (a *actor) startRank() {
	b, reg, name, slots := a.e.backend, a.registry(), a.e.name, a.e.slots
	epoch := a.gate.epoch(time.Now())
	a.call(opRank, nil, func(ctx context.Context, sent error) outcome {
		v, err := view{}, sent
		if sent == nil {
			v, err = readView(ctx, b, reg, name, slots, epoch)
		}
		return outcome{
			apply:   func() { a.ranked(v, err) },
			discard: func() { a.gate.fresh = false },
		}
	})
}

// ranked applies a rank: try now if preferred, and give up a slot held
// while out-ranked for longer than the preemption hysteresis.
func (a *actor) ranked(v view, err error) {
	now := time.Now()
	if err != nil {
		a.failed("rank", err)
		a.gate.fresh, a.gate.rankedAt = false, now
		a.at.try = now.Add(a.backoff())
		return
	}
	vd, err := judge(a.cfg().Strategy, a.e.name, v, a.e.entry(), len(a.e.slots))
	if err != nil {
		a.failed("rank", err)
		a.gate.fresh, a.gate.rankedAt = true, now
		a.at.try = now.Add(a.backoff())
		return
	}
	a.succeed()
	a.gate.apply(vd, a.term != nil, now)
	if a.term == nil {
		a.at.try = now
		return
	}
	if a.gate.shouldYield(now) {
		a.cfg().Logger.Info("out-ranked; giving the slot up", "name", a.e.name, "slot", a.term.event.Slot, "token", a.term.event.Token)
		a.resign(resignReq{done: make(chan error, 1)})
		a.gate.outrankedSince = time.Time{}
	}
}

// updated re-registers and re-ranks after SetScore.
func (a *actor) updated() {
	if a.gate == nil {
		return
	}
	a.gate.registered, a.gate.fresh = false, false
	if a.term == nil {
		a.at.try = time.Now()
	}
}
