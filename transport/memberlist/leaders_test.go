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
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/transport/memberlist"
)

// leads returns a check that every node's Leaders(name) is want.
func leads(nodes []*memberlist.Node, name string, want ...memberlist.Leader) func() error {
	return func() error {
		for _, n := range nodes {
			if got := n.Leaders(name); !slices.Equal(got, want) {
				return fmt.Errorf("%s sees %v, want %v", n.ID(), got, want)
			}
		}
		return nil
	}
}

func TestAnnounceAndWithdrawSpread(t *testing.T) {
	t.Parallel()
	nodes := cluster(t, "l1", "l2", "l3")
	ctx := t.Context()
	if err := nodes[0].Announce(ctx, "job", 0, 7); err != nil {
		t.Fatal(err)
	}
	if err := nodes[1].Announce(ctx, "rollups", 1, 3); err != nil {
		t.Fatal(err)
	}
	if err := nodes[2].Announce(ctx, "rollups", 0, 4); err != nil {
		t.Fatal(err)
	}
	eventually(t, "job's leader seen", leads(nodes, "job", memberlist.Leader{Node: "l1", Slot: 0, Token: 7}))
	eventually(t, "rollups' leaders seen", leads(nodes, "rollups",
		memberlist.Leader{Node: "l3", Slot: 0, Token: 4}, memberlist.Leader{Node: "l2", Slot: 1, Token: 3}))

	if err := nodes[0].Withdraw(ctx, "job", 6); err != nil {
		t.Fatal(err)
	}
	if got := nodes[0].Leaders("job"); len(got) != 1 {
		t.Errorf("Withdraw with another token took the claim back: %v", got)
	}
	if err := nodes[0].Withdraw(ctx, "job", 0); err != nil {
		t.Fatal(err)
	}
	eventually(t, "job withdrawn", leads(nodes, "job"))
}

// Track announces real campaigns' terms, and withdraws them when they are
// revoked: after a handover every node sees only the new holder.
func TestTrackCampaigns(t *testing.T) {
	t.Parallel()
	nodes := cluster(t, "t1", "t2")
	b := memory.New()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var cs []*campaign.Campaign
	var runs, tracks []chan error
	for _, n := range nodes {
		c, err := campaign.New(b, "job", campaign.WithID(n.ID()), campaign.WithTTL(5*time.Second), campaign.WithRetry(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		ran, tracked := make(chan error, 1), make(chan error, 1)
		go func() { ran <- c.Run(ctx) }()
		go func() { tracked <- n.Track(ctx, c.Subscribe(ctx)) }()
		cs, runs, tracks = append(cs, c), append(runs, ran), append(tracks, tracked)
		if len(cs) == 1 {
			eventually(t, "t1 leads", func() error { return leading(nodes, cs) })
		}
	}
	first := cs[0].State()
	if !first.Leader {
		t.Fatalf("t1 does not lead: %+v", first)
	}
	if err := cs[0].Resign(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the new term replaced the old", func() error {
		if got := nodes[1].Leaders("job"); len(got) == 1 && got[0].Token == first.Token {
			return fmt.Errorf("t2 still sees the resigned term %v", got)
		}
		return leading(nodes, cs)
	})
	for i, c := range cs {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if err := <-runs[i]; err != nil && !errors.Is(err, campaign.ErrClosed) {
			t.Errorf("Run: %v", err)
		}
		if err := <-tracks[i]; err != nil {
			t.Errorf("Track after the campaign ended: %v, want nil", err)
		}
	}
	eventually(t, "nothing claimed once the campaigns ended", leads(nodes, "job"))
}

// leading checks that every node sees exactly the term of the campaign
// that leads now.
func leading(nodes []*memberlist.Node, cs []*campaign.Campaign) error {
	for _, c := range cs {
		if st := c.State(); st.Leader {
			return leads(nodes, "job", memberlist.Leader{Node: st.ID, Token: st.Token})()
		}
	}
	return fmt.Errorf("no campaign leads")
}

// Track withdraws what it announced when its context ends before the
// campaign revoked it.
func TestTrackWithdrawsOnExit(t *testing.T) {
	t.Parallel()
	nodes := cluster(t, "w1", "w2")
	ch := make(chan events.Event, 1)
	ch <- events.Event{Kind: events.Elected, Name: "job", Slot: 2, Token: 9, Holder: "w1"}
	ctx, cancel := context.WithCancel(t.Context())
	tracked := make(chan error, 1)
	go func() { tracked <- nodes[0].Track(ctx, ch) }()
	eventually(t, "announced", leads(nodes, "job", memberlist.Leader{Node: "w1", Slot: 2, Token: 9}))
	cancel()
	if err := <-tracked; err != context.Canceled {
		t.Errorf("Track = %v, want context.Canceled", err)
	}
	eventually(t, "withdrawn", leads(nodes, "job"))
}
