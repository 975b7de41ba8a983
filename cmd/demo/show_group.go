package main

import (
	"context"
	"fmt"
	"slices"

	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/group"
	"github.com/hustings/hustings/strategy"
)

// weightedGroup runs five candidates for a group of three slots, preferring
// them by weighted rendezvous hashing. The two ranked last start first and
// take two slots; when the others join, they hand their slots over to the
// top three after the preemption delay.
func (s *stage) weightedGroup(ctx context.Context) error {
	name := s.prefix + "/rollups"
	weights := map[string]float64{"golf": 1, "hotel": 2, "india": 3, "juliett": 4, "kilo": 5}
	ranked, err := rankByWeight(name, weights)
	if err != nil {
		return err
	}
	top, last := slices.Sorted(slices.Values(ranked[:3])), slices.Sorted(slices.Values(ranked[3:]))
	s.tl.group(name)
	s.tl.note("a group of 3 slots for 5 candidates weighted 1 to 5 (golf … kilo); strategy weighted: this draw ranks them %v", ranked)
	start := func(ids []string) error {
		for _, id := range ids {
			g, err := group.New(s.b, name, 3, campaign.WithID(id), campaign.WithTTL(ttl), campaign.WithRetry(retry),
				group.WithStrategy(strategy.Weighted()), group.WithWeight(weights[id]), group.WithPreemption(ttl))
			if err != nil {
				return err
			}
			s.register(g)
			s.follow(ctx, g.Subscribe(ctx))
			s.wg.Go(func() { _ = g.Run(ctx) })
			s.closers = append(s.closers, closer{func() bool { return g.State().Leader }, func() { g.Close() }})
		}
		return nil
	}
	s.tl.note("%s and %s, ranked last, start first: alone, they top the ranking and take two slots", last[0], last[1])
	if err := start(last); err != nil {
		return err
	}
	if err := waitUntil(ctx, func() bool { return slices.Equal(s.printedLeaders(name), last) }); err != nil {
		return fmt.Errorf("the group did not elect %v: %w", last, err)
	}
	s.tl.note("%s, %s and %s join: one takes the free slot; %s and %s, out-ranked, hand theirs over after the preemption delay (%v)",
		top[0], top[1], top[2], last[0], last[1], ttl)
	if err := start(top); err != nil {
		return err
	}
	if err := waitUntil(ctx, func() bool { return slices.Equal(s.printedLeaders(name), top) }); err != nil {
		return fmt.Errorf("the group did not settle on %v: %w", top, err)
	}
	s.tl.note("slots held by %v: the top 3 of the draw, the same on every node", top)
	return nil
}

// rankByWeight ranks the candidates as every node does, epoch 0, and
// returns their IDs in order.
func rankByWeight(group string, weights map[string]float64) ([]string, error) {
	var cs []strategy.Candidate
	for id, w := range weights {
		cs = append(cs, strategy.Candidate{ID: id, Weight: w})
	}
	ranked, err := strategy.Weighted().Rank(group, 0, cs)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, c := range ranked {
		ids = append(ids, c.ID)
	}
	return ids, nil
}
