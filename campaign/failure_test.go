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
	lease := campaign.WithTTL(2 * time.Second)
	tests := []struct {
		name    string
		opts    []campaign.Option
		outcome campaign.Outcome
		ran     bool
		wantErr bool
	}{
		{"default", nil, 0, false, true},
		{"fail-open", []campaign.Option{campaign.WithFailOpen()}, campaign.Succeeded, true, false},
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
				if res.Err != nil {
					t.Fatalf("result's Err = %v, want none (fn returned nil, or did not run)", res.Err)
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

// Fail-open never runs fn while another candidate holds the lock, also
// when a keep-alive of the waiting run's session fails after it found the
// lock held: contention, once seen, is not taken for a backend failure.
func TestFailOpenNeverRunsAfterContentionThenFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &faulty{Backend: memory.New()}
		s, _ := holding(t, f.Backend, "holder", "x")
		f.failKeepAlive.Store(true) // one flaky keep-alive on the waiter's session
		ran := false
		res, err := campaign.RunIfLeader(t.Context(), f, "x", func(ctx context.Context, tok events.Token) (int, error) {
			ran = true
			return 0, nil
		}, campaign.WithID("a"), campaign.WithTTL(2*time.Second), campaign.WithWait(10*time.Second),
			campaign.WithFailOpen())
		h, herr := f.Backend.Holder(context.Background(), "x")
		if herr != nil {
			t.Fatal(herr)
		}
		if ran {
			t.Errorf("fn ran without the lock while %q holds it (token %d): %+v, %v", h.ID, h.Token, res, err)
		}
		if err := s.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
}

// A waiting RunIfLeader whose keep-alive hangs returns within the wait
// and the lease: the keep-alive is bounded by the lease, and then the
// backend's error is returned.
func TestWaitingRunKeepAliveIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		s, _ := holding(t, b, "holder", "x")
		time.AfterFunc(500*time.Millisecond, func() { b.Partition("a") })
		ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
		defer cancel()
		start := time.Now()
		res, err := campaign.RunIfLeader(ctx, b, "x", answer, campaign.WithID("a"),
			campaign.WithTTL(2*time.Second), campaign.WithWait(10*time.Second))
		if took := time.Since(start); took > 20*time.Second {
			t.Errorf("RunIfLeader (lease 2s, wait 10s) returned after %v: %+v, %v; want a backend failure within the wait + lease", took, res, err)
		}
		b.HealAll()
		if err := s.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
}
