package campaign_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
)

func TestFailureModes(t *testing.T) {
	lease := campaign.WithLease(2 * time.Second)
	tests := []struct {
		name    string
		opts    []campaign.Option
		outcome campaign.Outcome
		errSet  bool // Result.Err holds the backend's error
		ran     bool
		wantErr bool
	}{
		{"default", nil, 0, false, false, true},
		{"skip", []campaign.Option{campaign.WithSkipOnFailure()}, campaign.Skipped, true, false, false},
		{"fail-open", []campaign.Option{campaign.WithFailOpen()}, campaign.Succeeded, false, true, false},
		{"last wins", []campaign.Option{campaign.WithFailOpen(), campaign.WithSkipOnFailure()}, campaign.Skipped, true, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := memory.New()
				b.PartitionAll() // every call hangs: the backend is down
				defer b.HealAll()
				ran := false
				var token events.Token = 99
				res, err := campaign.RunIfLeader(t.Context(), b, "job", func(ctx context.Context, tok events.Token) (int, error) {
					ran, token = true, tok
					return 1, nil
				}, append(tt.opts, lease)...)
				if (err != nil) != tt.wantErr || (err != nil && !errors.Is(err, backends.ErrUnavailable)) {
					t.Fatalf("err = %v, want an error: %v (matching ErrUnavailable)", err, tt.wantErr)
				}
				if res.Outcome != tt.outcome || ran != tt.ran {
					t.Fatalf("result %+v, ran %v; want %v, ran %v", res, ran, tt.outcome, tt.ran)
				}
				if tt.errSet != (res.Err != nil) || (tt.errSet && !errors.Is(res.Err, backends.ErrUnavailable)) {
					t.Fatalf("result's Err = %v, want the backend's error: %v", res.Err, tt.errSet)
				}
				if ran && (token != 0 || res.Token != 0) {
					t.Fatalf("fail-open run got token %d (result %d), want 0 (no lock)", token, res.Token)
				}
			})
		})
	}
}

// Fail-open never runs fn when another candidate holds the lock.
func TestFailOpenNeverRunsOnContention(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		holder := start(t, b, "holder")
		next(t, holder.c.Events())
		ran := false
		res, err := campaign.RunIfLeader(t.Context(), b, "lock", func(ctx context.Context, tok events.Token) (int, error) {
			ran = true
			return 0, nil
		}, campaign.WithFailOpen())
		if err != nil || ran || res.Outcome != campaign.Skipped || res.Err != nil {
			t.Fatalf("%+v, %v, ran %v; want skipped for contention without running", res, err, ran)
		}
		holder.stop(t)
	})
}
