package group

import (
	"context"
	"fmt"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/elector"
)

// New returns a group campaign for name with maxLeaders slots on b: a
// campaign.Campaign that holds one of the group's slots, whose events and
// State carry the slot number. Every option of package campaign applies,
// with the options of this package. maxLeaders must be from 2 (one leader
// is a plain campaign.New) to 1,000. It validates and starts
// nothing: call Run.
func New(b backends.Backend, name string, maxLeaders int, opts ...campaign.Option) (*campaign.Campaign, error) {
	if err := checkSlots(maxLeaders); err != nil {
		return nil, err
	}
	return campaign.New(b, name, append(opts, slots(maxLeaders))...)
}

// mostSlots is the most slots a group may have. Each slot is a lock that
// a candidate may try in turn, so a group's cost grows with it; a thousand
// is far beyond any use seen (tenant roll-ups, shard owners).
const mostSlots = 1000

func checkSlots(n int) error {
	switch {
	case n < 2:
		return fmt.Errorf("%w: a group needs at least 2 slots, got %d (for one leader use campaign.New)", campaign.ErrInvalid, n)
	case n > mostSlots:
		return fmt.Errorf("%w: a group of %d slots; at most %d", campaign.ErrInvalid, n, mostSlots)
	}
	return nil
}

func slots(n int) campaign.Option {
	return elector.OptionFunc(func(c *elector.Config) { c.Slots = n })
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
