package elector

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/internal/validate"
	"github.com/hustings/hustings/strategy"
)

// gate lets a candidate try for a slot only when the strategy prefers it:
// when it ranks within the top N of the group's registered candidates, or
// when a slot has stayed free for the patience period (liveness beats
// preference). With preemption on, a holder that stays out-ranked by a
// candidate without a slot gives its slot up. Safety never depends on it:
// the slot locks alone keep the holders to N. Owned by the actor.
type gate struct {
	cfg *Config  // its Strategy, Patience, Preempt and Rotation
	own Registry // lists and registers us; nil: the backend and session do

	registered     bool      // the current session is registered
	registerAt     time.Time // no registration before this (after a failure)
	fresh          bool      // ranked since the last try or wake-up
	rankedAt       time.Time // when the last rank finished
	preferred      bool      // within the top N at the last rank
	freeSince      time.Time // a slot has been seen free since; zero if none
	outrankedSince time.Time // holding while out-ranked since; zero if not
}

// newGate returns the gate for cfg, or nil when no strategy is set.
func newGate(b backends.Backend, name string, cfg *Config) (*gate, error) {
	if cfg.Strategy == nil {
		return nil, nil
	}
	me := cfg.Me
	me.ID = cfg.ID
	if err := validate.Candidate(name, me); err != nil {
		return nil, Invalid(err)
	}
	if _, err := cfg.Strategy.Rank(name, 0, []strategy.Candidate{me}); err != nil {
		return nil, Invalid(err)
	}
	return &gate{cfg: cfg, own: cfg.Registry}, nil
}

// epoch is the rotation period's index, the same on every node whose
// clock agrees to within a period.
func (g *gate) epoch(now time.Time) uint64 {
	if g.cfg.Rotation <= 0 {
		return 0
	}
	return uint64(now.UnixNano() / int64(g.cfg.Rotation))
}

// eligible reports whether the candidate may try for a slot now.
func (g *gate) eligible(now time.Time) bool {
	return g.preferred || (!g.freeSince.IsZero() && !now.Before(g.freeSince.Add(g.cfg.Patience)))
}

// view is what a rank op read: the members and each slot's holder.
type view struct {
	members []strategy.Candidate
	holders []string // "" for a free slot
	epoch   uint64
}

// readView reads the registry and the slot holders.
func readView(ctx context.Context, b backends.Backend, reg Registry, name string, slots []string, epoch uint64) (view, error) {
	members, err := reg.Members(ctx, name)
	if err != nil {
		return view{}, err
	}
	v := view{members: members, epoch: epoch}
	for _, s := range slots {
		h, err := b.Holder(ctx, s)
		if err != nil {
			return view{}, err
		}
		v.holders = append(v.holders, h.ID)
	}
	return v, nil
}

// verdict is what a view means for one candidate.
type verdict struct {
	preferred bool // within the top N
	free      bool // some slot is free
	outranked bool // holds a slot while a preferred candidate holds none
}

// judge ranks the view for candidate me of a group of n slots. It is pure.
func judge(s strategy.Strategy, group string, v view, me strategy.Candidate, n int) (verdict, error) {
	members := dedupe(append(rankable(s, group, v.members), me))
	ranked, err := s.Rank(group, v.epoch, members)
	if err != nil {
		return verdict{}, err
	}
	top := ranked[:min(n, len(ranked))]
	holding := map[string]bool{}
	var vd verdict
	for _, h := range v.holders {
		holding[h] = h != ""
		vd.free = vd.free || h == ""
	}
	topWithoutSlot := false
	for _, c := range top {
		vd.preferred = vd.preferred || c.ID == me.ID
		topWithoutSlot = topWithoutSlot || !holding[c.ID]
	}
	vd.outranked = holding[me.ID] && !vd.preferred && topWithoutSlot
	return vd, nil
}

// rankable drops the entries the strategy cannot rank (a peer registered
// without a weight under Weighted, say, during a rolling change of
// strategy), so that one bad entry cannot stop the group from ranking.
func rankable(s strategy.Strategy, group string, cs []strategy.Candidate) []strategy.Candidate {
	out := make([]strategy.Candidate, 0, len(cs))
	for _, c := range cs {
		if _, err := s.Rank(group, 0, []strategy.Candidate{c}); err == nil {
			out = append(out, c)
		}
	}
	return out
}

// dedupe keeps one entry per ID, the earliest registered; me, appended
// last with order 0, counts only if the registry does not list it yet.
func dedupe(cs []strategy.Candidate) []strategy.Candidate {
	byID := map[string]strategy.Candidate{}
	for i, c := range cs {
		if i == len(cs)-1 {
			if _, listed := byID[c.ID]; listed {
				continue
			}
			c.Order = ^uint64(0) // not registered yet: last in FIFO order
		}
		if old, ok := byID[c.ID]; !ok || c.Order < old.Order {
			byID[c.ID] = c
		}
	}
	out := make([]strategy.Candidate, 0, len(byID))
	for _, c := range byID {
		out = append(out, c)
	}
	slices.SortFunc(out, func(x, y strategy.Candidate) int { return cmp.Compare(x.ID, y.ID) })
	return out
}

// apply records a verdict reached at now.
func (g *gate) apply(vd verdict, holding bool, now time.Time) {
	g.fresh, g.rankedAt, g.preferred = true, now, vd.preferred
	switch {
	case !vd.free:
		g.freeSince = time.Time{}
	case g.freeSince.IsZero():
		g.freeSince = now
	}
	switch {
	case !holding || !vd.outranked:
		g.outrankedSince = time.Time{}
	case g.outrankedSince.IsZero():
		g.outrankedSince = now
	}
}

// shouldYield reports whether a holder has been out-ranked for longer than
// the preemption hysteresis.
func (g *gate) shouldYield(now time.Time) bool {
	return g.cfg.Preempt > 0 && !g.outrankedSince.IsZero() && !now.Before(g.outrankedSince.Add(g.cfg.Preempt))
}
