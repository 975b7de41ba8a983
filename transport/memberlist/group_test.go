package memberlist_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/group"
	"github.com/hustings/hustings/strategy"
	"github.com/hustings/hustings/transport/memberlist"
)

var _ group.Registry = (*memberlist.Node)(nil)

// Three nodes campaign for two slots, each ranking the candidates its own
// node learns by gossip: the two best scorers end up holding the slots,
// though the worst one started first, and every node sees who holds them.
func TestGroupPrefersTopScorersByGossip(t *testing.T) {
	t.Parallel()
	nodes := cluster(t, "s1", "s2", "s3")
	b := memory.New()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	type member struct {
		g            *campaign.Campaign
		ran, tracked chan error
	}
	var ms []member
	for i, n := range nodes {
		g, err := group.New(b, "g", 2,
			campaign.WithID(n.ID()),
			campaign.WithTTL(5*time.Second),
			campaign.WithRetry(100*time.Millisecond),
			group.WithRegistry(n),
			group.WithStrategy(strategy.Score()),
			group.WithScore(float64(i+1)),
			group.WithPreemption(300*time.Millisecond),
		)
		if err != nil {
			t.Fatal(err)
		}
		m := member{g: g, ran: make(chan error, 1), tracked: make(chan error, 1)}
		go func() { m.ran <- g.Run(ctx) }()
		go func() { m.tracked <- n.Track(ctx, g.Subscribe(ctx)) }()
		ms = append(ms, m)
		if i == 0 {
			eventually(t, "s1 takes a slot while alone", func() error {
				if !g.State().Leader {
					return fmt.Errorf("s1 does not lead")
				}
				return nil
			})
		}
	}
	eventually(t, "s2 and s3 hold the slots", func() error {
		var holders []string
		for _, m := range ms {
			if st := m.g.State(); st.Leader {
				holders = append(holders, st.ID)
			}
		}
		if !slices.Equal(holders, []string{"s2", "s3"}) {
			return fmt.Errorf("holders %v", holders)
		}
		for _, n := range nodes {
			var seen []string
			for _, l := range n.Leaders("g") {
				seen = append(seen, l.Node)
			}
			slices.Sort(seen)
			if !slices.Equal(seen, holders) {
				return fmt.Errorf("%s sees %v lead", n.ID(), seen)
			}
		}
		return nil
	})
	for _, m := range ms {
		if err := m.g.Close(); err != nil {
			t.Error(err)
		}
		if err := <-m.ran; err != nil && !errors.Is(err, campaign.ErrClosed) {
			t.Errorf("Run: %v", err)
		}
		if err := <-m.tracked; err != nil {
			t.Errorf("Track: %v", err)
		}
	}
}

// A group whose candidate ID is not its node's gets a clear error from
// the registry rather than a ranking that never lists it.
func TestRegisterRejectsAnotherID(t *testing.T) {
	t.Parallel()
	n := newNode(t, "me")
	_, err := n.Register(context.Background(), "g", strategy.Candidate{ID: "someone-else"})
	if !errors.Is(err, memberlist.ErrInvalid) {
		t.Errorf("Register with another ID: %v, want ErrInvalid", err)
	}
}
