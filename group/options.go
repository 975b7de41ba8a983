package group

import (
	"context"
	"errors"
	"time"

	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/internal/elector"
	"github.com/hustings/hustings/internal/validate"
	"github.com/hustings/hustings/strategy"
)

// These options apply to New (and to campaign.New, a group of one slot);
// given to any other call, they make it return ErrInvalid. With a
// strategy set, the candidates are listed by the backend's registry
// (Backend.Members) unless WithRegistry gives another.

// strategic is where the options of this file apply.
const strategic = elector.ForGroup | elector.ForCampaign

// WithStrategy makes the group prefer candidates by s: only candidates
// ranked within the top N of the registered candidates try for a slot at
// once; the others try only once a slot has stayed free for the patience
// period. Default: none, every candidate tries for any free slot; a nil
// s is ErrInvalid.
func WithStrategy(s strategy.Strategy) campaign.Option {
	return elector.Opt("WithStrategy", strategic, func(c *elector.Config) {
		if validate.Nil(s) {
			c.Reject(errors.New("nil strategy"))
			return
		}
		c.Strategy = s
	})
}

// WithScore sets this candidate's initial score, for strategy.Score;
// change it later with the campaign's SetScore. Default 0.
func WithScore(score float64) campaign.Option {
	return elector.Opt("WithScore", strategic, func(c *elector.Config) { c.Me.Score = score })
}

// WithWeight sets this candidate's weight, for strategy.Weighted: its
// chance to rank first is proportional to it. Must be > 0 there. Default 0.
func WithWeight(w float64) campaign.Option {
	return elector.Opt("WithWeight", strategic, func(c *elector.Config) { c.Me.Weight = w })
}

// WithPatience sets how long a slot must stay free before a candidate the
// strategy does not prefer may take it: liveness beats preference. Default:
// twice the retry interval.
func WithPatience(d time.Duration) campaign.Option {
	return elector.Opt("WithPatience", strategic, func(c *elector.Config) { c.Patience = d })
}

// WithPreemption makes a holder give its slot up when, for at least d on
// end, it ranks outside the top N while a candidate within the top N holds
// no slot. It gives the slot up at a safe point: its term's context is
// cancelled and the slot is released only after the work bound to the
// term returned (bounded by the grace period). d is the hysteresis that
// keeps wobbling scores from moving slots back and forth. Default 0: no
// preemption.
func WithPreemption(d time.Duration) campaign.Option {
	return elector.Opt("WithPreemption", strategic, func(c *elector.Config) { c.Preempt = d })
}

// WithRotation advances the strategy's epoch every d, so random and
// weighted rankings draw again (fair turn-taking, with WithPreemption).
// Epochs follow each node's clock; nodes whose clocks differ by much less
// than d agree. Default 0: the epoch never advances.
func WithRotation(d time.Duration) campaign.Option {
	return elector.Opt("WithRotation", strategic, func(c *elector.Config) { c.Rotation = d })
}

// Registry is a candidate registry other than the backend's, such as the
// gossip of package transport/memberlist: it lists a group's candidates and
// takes this candidate's entry. Its methods must be safe for concurrent
// use.
type Registry interface {
	// Members lists group's live candidates, as backends.Backend's
	// Members does.
	Members(ctx context.Context, group string) ([]strategy.Candidate, error)
	// Register adds or updates this candidate's entry, as
	// backends.Session's Register does.
	Register(ctx context.Context, group string, c strategy.Candidate) (strategy.Candidate, error)
	// Deregister removes this candidate's entry; removing an entry that
	// is not there is not an error.
	Deregister(ctx context.Context, group string) error
}

// WithRegistry makes the strategy rank the candidates r lists, and
// registers this candidate with r, instead of using the backend's registry.
// A registry whose entries are not tied to the backend session (gossip) can
// list a dead candidate for a while; the patience period keeps that from
// blocking a slot. Default: the backend's registry; a nil r is
// ErrInvalid.
func WithRegistry(r Registry) campaign.Option {
	return elector.Opt("WithRegistry", strategic, func(c *elector.Config) {
		if validate.Nil(r) {
			c.Reject(errors.New("nil registry"))
			return
		}
		c.Registry = r
	})
}
