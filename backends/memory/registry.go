package memory

import (
	"cmp"
	"context"
	"maps"
	"slices"

	"github.com/hustings/hustings/internal/validate"
	"github.com/hustings/hustings/strategy"
)

// Members lists the candidates registered in group whose sessions are
// alive, in registration order.
func (b *Backend) Members(ctx context.Context, group string) ([]strategy.Candidate, error) {
	if err := validate.Name(group); err != nil {
		return nil, err
	}
	if err := b.reach(ctx, ""); err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	var out []strategy.Candidate
	for s, c := range b.groups[group] {
		if !s.alive(now) || s.closed {
			delete(b.groups[group], s) // dead entries go as they are found
			continue
		}
		c.Meta = maps.Clone(c.Meta)
		out = append(out, c)
	}
	slices.SortFunc(out, func(x, y strategy.Candidate) int { return cmp.Compare(x.Order, y.Order) })
	return out, nil
}

// Register adds or updates s's entry in group; the order is assigned once.
func (s *session) Register(ctx context.Context, group string, c strategy.Candidate) (strategy.Candidate, error) {
	if err := s.usable(); err != nil {
		return strategy.Candidate{}, err
	}
	if err := validate.Candidate(group, c); err != nil {
		return strategy.Candidate{}, err
	}
	if err := s.b.reach(ctx, s.id); err != nil {
		return strategy.Candidate{}, err
	}
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	if err := s.check(s.b.clock.Now()); err != nil {
		return strategy.Candidate{}, err
	}
	entries := s.b.groups[group]
	if entries == nil {
		entries = make(map[*session]strategy.Candidate)
		s.b.groups[group] = entries
	}
	c.ID, c.Meta = s.id, maps.Clone(c.Meta)
	if old, ok := entries[s]; ok {
		c.Order = old.Order
	} else {
		s.b.orders[group]++
		c.Order = s.b.orders[group]
	}
	entries[s] = c
	return c, nil
}

// Deregister removes s's entry from group.
func (s *session) Deregister(ctx context.Context, group string) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := validate.Name(group); err != nil {
		return err
	}
	if err := s.b.reach(ctx, s.id); err != nil {
		return err
	}
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	delete(s.b.groups[group], s)
	if len(s.b.groups[group]) == 0 {
		delete(s.b.groups, group)
	}
	return nil
}
