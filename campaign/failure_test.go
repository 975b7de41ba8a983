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
		mode    campaign.FailureMode
		outcome campaign.Outcome
		reason  campaign.Cause
		ran     bool
		wantErr bool
	}{
		{campaign.Rethrow, 0, campaign.NoCause, false, true},
		{campaign.Skip, campaign.Skipped, campaign.BackendError, false, false},
		{campaign.FailOpenRun, campaign.Succeeded, campaign.FailOpenForced, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.mode.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := memory.New()
				b.PartitionAll() // every call hangs: the backend is down
				defer b.HealAll()
				ran := false
				var token events.Token = 99
				res, err := campaign.RunIfLeader(t.Context(), b, "job", func(ctx context.Context, tok events.Token) (int, error) {
					ran, token = true, tok
					return 1, nil
				}, lease, campaign.WithFailureMode(tt.mode))
				if (err != nil) != tt.wantErr || (err != nil && !errors.Is(err, backends.ErrUnavailable)) {
					t.Fatalf("err = %v, want an error: %v (matching ErrUnavailable)", err, tt.wantErr)
				}
				if res.Outcome != tt.outcome || res.Cause != tt.reason || ran != tt.ran {
					t.Fatalf("result %+v, ran %v; want %v, %v, ran %v", res, ran, tt.outcome, tt.reason, tt.ran)
				}
				if tt.mode == campaign.Skip && !errors.Is(res.Err, backends.ErrUnavailable) {
					t.Fatalf("skipped result's Err = %v, want the backend's error", res.Err)
				}
				if ran && token != 0 {
					t.Fatalf("fail-open run got token %d, want 0 (no lock)", token)
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
		}, campaign.WithFailureMode(campaign.FailOpenRun))
		if err != nil || ran || res.Outcome != campaign.Skipped || res.Cause != campaign.Contention {
			t.Fatalf("%+v, %v, ran %v; want skipped for contention without running", res, err, ran)
		}
		holder.stop(t)
	})
}

func TestUnknownFailureMode(t *testing.T) {
	_, err := campaign.RunIfLeader(t.Context(), memory.New(), "x", answer, campaign.WithFailureMode(7))
	if !errors.Is(err, campaign.ErrInvalid) {
		t.Fatalf("err = %v, want ErrInvalid", err)
	}
}
