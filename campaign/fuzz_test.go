package campaign_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/group"
	"github.com/hustings/hustings/internal/validate"
)

// FuzzOptions: any durations and slot count given to New, group.New and
// RunIfLeader either make a campaign (or a run) or are refused with
// ErrInvalid; never a panic. A campaign that is made has a TTL within the
// backends' range and a safety margin that leaves room for its renewals;
// a run that runs, a TTL within the backends' range.
func FuzzOptions(f *testing.F) {
	f.Add(int64(10*time.Second), int64(time.Second), int64(-1), int64(0), 3)
	f.Add(int64(0), int64(0), int64(0), int64(time.Millisecond), 1)
	f.Add(int64(1<<62), int64(1), int64(1), int64(-1), 0)
	f.Add(int64(time.Second), int64(-1), int64(700*time.Millisecond), int64(-1), 1)
	f.Fuzz(func(t *testing.T, ttl, retry, margin, runTTL int64, slots int) {
		var opts []campaign.Option
		add := func(v int64, o func(time.Duration) campaign.Option) {
			if v != -1 { // -1: leave the option out
				opts = append(opts, o(time.Duration(v)))
			}
		}
		add(ttl, campaign.WithTTL)
		add(retry, campaign.WithRetry)
		add(margin, campaign.WithSafetyMargin)
		b := memory.New()
		c, err := campaign.New(b, "x", opts...)
		switch {
		case err != nil && !errors.Is(err, campaign.ErrInvalid):
			t.Fatalf("New = %v, not ErrInvalid", err)
		case err == nil:
			closeOK(t, c)
			if ttl != -1 && (time.Duration(ttl) < 100*time.Millisecond || time.Duration(ttl) > validate.MaxTTL) {
				t.Fatalf("New took TTL %v", time.Duration(ttl))
			}
			if ttl != -1 && margin != -1 && margin >= ttl-ttl/3 {
				t.Fatalf("New took margin %v with TTL %v: no room for a renewal every third of it", time.Duration(margin), time.Duration(ttl))
			}
		}
		g, err := group.New(b, "g", slots, opts...)
		switch {
		case err != nil && !errors.Is(err, campaign.ErrInvalid):
			t.Fatalf("group.New = %v, not ErrInvalid", err)
		case err == nil:
			closeOK(t, g)
			if slots < 2 {
				t.Fatalf("group.New took %d slots", slots)
			}
		}
		opts = nil
		add(retry, campaign.WithRetry)
		add(margin, campaign.WithSafetyMargin)
		add(runTTL, campaign.WithTTL)
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		_, err = campaign.RunIfLeader(ctx, b, "run", func(context.Context, events.Token) (int, error) { return 0, nil }, opts...)
		switch {
		case err != nil && !errors.Is(err, campaign.ErrInvalid) && ctx.Err() == nil &&
			!errors.Is(err, backends.ErrSessionLost) && !errors.Is(err, backends.ErrUnavailable):
			// A TTL of a millisecond may run out before the open or the
			// acquire: a backend failure, not bad input.
			t.Fatalf("RunIfLeader = %v, neither ErrInvalid nor a backend failure", err)
		case err == nil && runTTL != -1 && (runTTL <= 0 || time.Duration(runTTL) > validate.MaxTTL):
			t.Fatalf("RunIfLeader took TTL %v", time.Duration(runTTL))
		}
	})
}
