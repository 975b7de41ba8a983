package campaign_test

import (
	"context"
	"testing"
	"time"

	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
)

// BenchmarkRunIfLeaderOnSession measures what a one-shot run on a
// session costs the engine itself, on the in-memory backend (whose calls
// cost next to nothing): its allocations are the client's share of a run
// on every backend.
func BenchmarkRunIfLeaderOnSession(b *testing.B) {
	be := memory.New()
	s, err := campaign.NewSession(be, campaign.WithID("bench"), campaign.WithTTL(10*time.Second))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	fn := func(context.Context, events.Token) (struct{}, error) { return struct{}{}, nil }
	opt := campaign.WithSession(s)
	b.ReportAllocs()
	for b.Loop() {
		res, err := campaign.RunIfLeader(ctx, be, "job", fn, opt)
		if err != nil || res.Outcome != campaign.Succeeded {
			b.Fatalf("RunIfLeader = %+v, %v", res, err)
		}
	}
}
