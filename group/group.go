package group

import (
	"context"
	"fmt"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/elector"
)

// Group is one candidate's long-lived attempt to hold one of a group's N
// slots. It publishes Elected, with the slot number, once the backend has
// confirmed a slot, and Revoked when the term ends, exactly as a
// campaign.Campaign does for a single lock. Its methods are safe for
// concurrent use.
type Group struct {
	e *elector.Elector
}

// New returns a group campaign for name with maxLeaders slots on b. Every
// option of package campaign applies, with the options of this package.
// maxLeaders must be from 2 (one leader is a campaign.Campaign) to
// MaxLeaders. It validates and starts nothing: call Run.
func New(b backends.Backend, name string, maxLeaders int, opts ...campaign.Option) (*Group, error) {
	if err := checkSlots(maxLeaders); err != nil {
		return nil, err
	}
	e, err := elector.New(b, name, append(opts, slots(maxLeaders))...)
	if err != nil {
		return nil, err
	}
	return &Group{e: e}, nil
}

// MaxLeaders is the most slots a group may have. Each slot is a lock that
// a candidate may try in turn, so a group's cost grows with it; a thousand
// is far beyond any use seen (tenant roll-ups, shard owners).
const MaxLeaders = 1000

func checkSlots(n int) error {
	switch {
	case n < 2:
		return fmt.Errorf("%w: a group needs at least 2 slots, got %d (for one leader use campaign.New)", campaign.ErrInvalid, n)
	case n > MaxLeaders:
		return fmt.Errorf("%w: a group of %d slots; at most %d", campaign.ErrInvalid, n, MaxLeaders)
	}
	return nil
}

func slots(n int) campaign.Option {
	return elector.OptionFunc(func(c *elector.Config) { c.Slots = n })
}

// Name returns the group's full name, prefix included; slot i is the lock
// Name()+"/slot-i".
func (g *Group) Name() string { return g.e.Name() }

// ID returns the candidate ID.
func (g *Group) ID() string { return g.e.ID() }

// Events returns the group campaign's event channel, the same on every
// call, closed when Run returns; see campaign.Campaign.Events.
func (g *Group) Events() <-chan events.Event { return g.e.Events() }

// Subscribe returns a channel for one more subscriber; see
// campaign.Campaign.Subscribe.
func (g *Group) Subscribe(ctx context.Context) <-chan events.Event { return g.e.Subscribe(ctx) }

// State returns a snapshot, for observation only; State.Slot is the slot
// held.
func (g *Group) State() campaign.State { return g.e.State() }

// Run campaigns for a slot until ctx ends or Close is called; see
// campaign.Campaign.Run.
func (g *Group) Run(ctx context.Context) error { return g.e.Run(ctx) }

// Resign gives up the slot held, if any; see campaign.Campaign.Resign.
func (g *Group) Resign(ctx context.Context) error { return g.e.Resign(ctx) }

// Close stops the group campaign; see campaign.Campaign.Close.
func (g *Group) Close() error { return g.e.Close() }

// Term binds work to the term in force; see campaign.Campaign.Term.
func (g *Group) Term(token events.Token) (ctx context.Context, elected events.Event, done func(), ok bool) {
	return g.e.Term(token)
}

// WhileLeader runs g and calls fn for each term in which it holds a slot;
// see campaign.WhileLeader.
func WhileLeader(ctx context.Context, g *Group, fn func(ctx context.Context, term events.Event) error) error {
	if g == nil || fn == nil {
		return fmt.Errorf("%w: nil group or function", campaign.ErrInvalid)
	}
	return elector.WhileLeader(ctx, g.e, fn)
}

// RunIfLeader runs fn once if one of the group's maxLeaders slots can be
// had, and releases it after; with every slot held it returns a Skipped
// result. Result.Slot says which slot fn ran in. Everything else is as for
// campaign.RunIfLeader, options included.
func RunIfLeader[T any](ctx context.Context, b backends.Backend, name string, maxLeaders int, fn func(ctx context.Context, token events.Token) (T, error), opts ...campaign.Option) (campaign.Result[T], error) {
	if err := checkSlots(maxLeaders); err != nil {
		return campaign.Result[T]{}, err
	}
	return campaign.RunIfLeader(ctx, b, name, fn, append(opts, slots(maxLeaders))...)
}

// SetScore changes this candidate's score in the registry (for
// strategy.Score); the group re-ranks at once. It returns ErrInvalid for a
// NaN or infinite score, and ErrClosed after Close or once Run has
// returned.
func (g *Group) SetScore(score float64) error { return g.e.SetScore(score) }
