package campaign_test

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
)

func answer(ctx context.Context, tok events.Token) (int, error) { return 42, nil }

func TestRunIfLeaderOutcomes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		ctx := t.Context()

		res, err := campaign.RunIfLeader(ctx, b, "job", answer)
		if err != nil || res.Outcome != campaign.Succeeded || res.Value != 42 || res.Token == 0 {
			t.Fatalf("free lock: %+v, %v; want elected with 42 and a token", res, err)
		}
		if h := holderOf(t, b, "job"); h.ID != "" {
			t.Fatalf("lock still held after the run: %+v", h)
		}

		boom := errors.New("boom")
		failed, err := campaign.RunIfLeader(ctx, b, "job", func(ctx context.Context, tok events.Token) (int, error) { return 0, boom })
		if err != nil || failed.Outcome != campaign.ActionFailed || !errors.Is(failed.Err, boom) || failed.Token <= res.Token {
			t.Fatalf("failing fn: %+v, %v; want action-failed with boom and a higher token", failed, err)
		}

		holder := start(t, b, "holder", campaign.WithTTL(ttl))
		next(t, holder.c.Events())
		ran := false
		skipped, err := campaign.RunIfLeader(ctx, b, "lock", func(ctx context.Context, tok events.Token) (int, error) { ran = true; return 1, nil })
		if err != nil || skipped.Outcome != campaign.Skipped || ran {
			t.Fatalf("held lock: %+v, %v, ran=%v; want skipped without running", skipped, err, ran)
		}
		holder.stop(t)
	})
}

func TestRunIfLeaderRejectsBadInput(t *testing.T) {
	b := memory.New()
	ctx := t.Context()
	tests := []struct {
		name string
		b    backends.Backend
		lock string
		fn   func(context.Context, events.Token) (int, error)
		opts []campaign.Option
	}{
		{"nil backend", nil, "x", answer, nil},
		{"nil fn", b, "x", nil, nil},
		{"empty name", b, "", answer, nil},
		{"negative lease", b, "x", answer, []campaign.Option{campaign.WithTTL(-1)}},
		{"zero lease", b, "x", answer, []campaign.Option{campaign.WithTTL(0)}},
		{"lease overflowing milliseconds", b, "x", answer, []campaign.Option{campaign.WithTTL(math.MaxInt64)}},
		{"negative wait", b, "x", answer, []campaign.Option{campaign.WithWait(-1)}},
		{"negative hold", b, "x", answer, []campaign.Option{campaign.WithMinHold(-1)}},
		{"margin over lease", b, "x", answer, []campaign.Option{campaign.WithTTL(time.Second), campaign.WithSafetyMargin(2 * time.Second)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := campaign.RunIfLeader(ctx, tt.b, tt.lock, tt.fn, tt.opts...); !errors.Is(err, campaign.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
		})
	}
}

func TestRunIfLeaderReturnsContextErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if _, err := campaign.RunIfLeader(ctx, b, "x", answer); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled before: err = %v, want context.Canceled", err)
		}

		ctx, cancel = context.WithCancel(t.Context())
		res, err := campaign.RunIfLeader(ctx, b, "x", func(ctx context.Context, tok events.Token) (int, error) {
			cancel()
			<-ctx.Done()
			return 0, ctx.Err()
		})
		if err != nil || res.Outcome != campaign.ActionFailed || !errors.Is(res.Err, context.Canceled) {
			t.Fatalf("cancelled during fn, fn returned ctx.Err(): %+v, %v; want action-failed with context.Canceled, and no error", res, err)
		}
		ctx, cancel = context.WithCancel(t.Context())
		res, err = campaign.RunIfLeader(ctx, b, "x", func(ctx context.Context, tok events.Token) (int, error) {
			cancel()
			return 42, nil // finished anyway
		})
		if err != nil || res.Outcome != campaign.Succeeded || res.Value != 42 {
			t.Fatalf("cancelled during fn, fn returned nil: %+v, %v; want elected with its value, and no error", res, err)
		}
		if h := holderOf(t, b, "x"); h.ID != "" {
			t.Fatalf("lock not released after cancellation: %+v", h)
		}

		b.PartitionAll()
		ctx, cancel = context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if _, err := campaign.RunIfLeader(ctx, b, "x", answer); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("unreachable backend: err = %v, want the context's deadline", err)
		}
		b.HealAll()
	})
}

func TestRunIfLeaderLeaseEndsFnContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		lease := 10 * time.Second
		began := time.Now()
		var ended time.Time
		res, err := campaign.RunIfLeader(t.Context(), b, "x", func(ctx context.Context, tok events.Token) (int, error) {
			<-ctx.Done()
			ended = time.Now()
			return 0, ctx.Err()
		}, campaign.WithTTL(lease))
		if err != nil || res.Outcome != campaign.ActionFailed || !errors.Is(res.Err, context.DeadlineExceeded) {
			t.Fatalf("%+v, %v; want action-failed with the lease deadline", res, err)
		}
		if took := ended.Sub(began); took >= lease || took < lease*8/10 {
			t.Fatalf("fn's context ended after %v; want just under the %v lease", took, lease)
		}
	})
}

func TestRunIfLeaderWaitsForRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		holder := start(t, b, "holder")
		next(t, holder.c.Events())
		go func() {
			time.Sleep(3 * time.Second)
			if err := holder.c.Resign(context.Background()); err != nil {
				t.Errorf("Resign: %v", err)
			}
		}()
		began := time.Now()
		res, err := campaign.RunIfLeader(t.Context(), b, "lock", answer, campaign.WithWait(time.Minute), campaign.WithRetry(20*time.Second))
		if err != nil || res.Outcome != campaign.Succeeded {
			t.Fatalf("%+v, %v; want elected after waiting", res, err)
		}
		if took := time.Since(began); took >= 20*time.Second {
			t.Fatalf("waited %v: woken by polling, not by the release", took)
		}
		holder.stop(t)
	})
}

func TestRunIfLeaderMinHoldMakesLateNodesSkip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		hold := campaign.WithMinHold(time.Minute)
		if res, err := campaign.RunIfLeader(t.Context(), b, "x", answer, hold); err != nil || res.Outcome != campaign.Succeeded {
			t.Fatalf("first run %v (%v)", res.Outcome, err)
		}
		time.Sleep(30 * time.Second)
		if res, err := campaign.RunIfLeader(t.Context(), b, "x", answer, hold); err != nil || res.Outcome != campaign.Skipped {
			t.Fatalf("run inside the minimum hold: %v (%v), want skipped", res.Outcome, err)
		}
		time.Sleep(31 * time.Second)
		if res, err := campaign.RunIfLeader(t.Context(), b, "x", answer, hold); err != nil || res.Outcome != campaign.Succeeded {
			t.Fatalf("run after the minimum hold: %v (%v), want elected", res.Outcome, err)
		}
	})
}

func TestRunIfLeaderRacersRunOnce(t *testing.T) {
	b := memory.New()
	var ran atomic.Int32
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for range 16 {
		wg.Go(func() {
			<-gate
			_, err := campaign.RunIfLeader(t.Context(), b, "x", func(ctx context.Context, tok events.Token) (int, error) {
				ran.Add(1)
				return 0, nil
			}, campaign.WithMinHold(time.Hour))
			if err != nil {
				t.Errorf("RunIfLeader: %v", err)
			}
		})
	}
	close(gate)
	wg.Wait()
	if n := ran.Load(); n != 1 {
		t.Fatalf("fn ran %d times among 16 racers, want 1", n)
	}
}

func TestEveryRejectsBadPeriod(t *testing.T) {
	for _, period := range []time.Duration{0, -time.Second, 50 * time.Millisecond} {
		err := campaign.Every(t.Context(), memory.New(), "x", period, func(context.Context, events.Token) error { return nil })
		if !errors.Is(err, campaign.ErrInvalid) {
			t.Fatalf("period %v: err = %v, want ErrInvalid", period, err)
		}
	}
}

// TestEverySkewedClocks: replicas whose clocks disagree by less than the
// safety margin still run every window exactly once, each window as the
// runner's own clock names it, with tokens increasing from window to
// window; short periods work as long ones do.
func TestEverySkewedClocks(t *testing.T) {
	for _, period := range []time.Duration{time.Minute, time.Second} {
		t.Run(period.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := memory.New()
				margin := period / 10 // the default: a tenth of the lease, the period
				var mu sync.Mutex
				runs := map[time.Time]int{}
				var tokens []events.Token
				ctx, cancel := context.WithCancel(t.Context())
				var wg sync.WaitGroup
				for i, skew := range []time.Duration{0, margin / 3, -margin / 3, margin / 5, -margin / 5} {
					now := func() time.Time { return time.Now().Add(skew) }
					wg.Go(func() {
						time.Sleep(time.Duration(i) * period / 50) // skewed starts too
						err := campaign.Every(ctx, b, "nightly", period, func(ctx context.Context, tok events.Token) error {
							mu.Lock()
							defer mu.Unlock()
							runs[now().Round(period)]++ // the runner's window start, to the nearest period
							tokens = append(tokens, tok)
							return nil
						}, campaign.WithClock(now))
						if !errors.Is(err, context.Canceled) {
							t.Errorf("Every = %v, want context.Canceled", err)
						}
					})
				}
				time.Sleep(10*period + period/2)
				cancel()
				wg.Wait()
				if len(runs) != 10 {
					t.Fatalf("ran in %d windows out of 10: %v", len(runs), runs)
				}
				for w, n := range runs {
					if n != 1 {
						t.Errorf("window %v ran %d times", w, n)
					}
				}
				for i := 1; i < len(tokens); i++ {
					if tokens[i] <= tokens[i-1] {
						t.Fatalf("tokens not increasing: %v", tokens)
					}
				}
			})
		})
	}
}

func TestObserveFollowsTheHolder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		ctx, cancel := context.WithCancel(t.Context())
		ch, err := campaign.Observe(ctx, b, "lock", campaign.WithRetry(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if e := next(t, ch); e.Kind != events.LeaderChanged || e.Holder != "" {
			t.Fatalf("first event %s, want leader-changed to nobody", e)
		}
		a := start(t, b, "a")
		won := next(t, a.c.Events())
		if e := next(t, ch); e.Holder != "a" || e.Token != won.Token {
			t.Fatalf("observer saw %s, want a with token %d", e, won.Token)
		}
		began := time.Now()
		a.stop(t)
		if e := next(t, ch); e.Holder != "" || time.Since(began) >= time.Hour {
			t.Fatalf("observer saw %s after %v, want nobody, woken by the release", e, time.Since(began))
		}
		cancel()
		for range ch {
		}
	})
}

func TestObserveRejectsBadName(t *testing.T) {
	if _, err := campaign.Observe(t.Context(), memory.New(), ""); !errors.Is(err, campaign.ErrInvalid) {
		t.Fatalf("err = %v, want ErrInvalid", err)
	}
}

// A RunIfLeader that waits for a held lock returns its context's error
// when the context ends during the wait.
func TestRunIfLeaderReturnsContextErrorDuringWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		s, _ := holding(t, b, "holder", "x")
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		res, err := campaign.RunIfLeader(ctx, b, "x", answer, campaign.WithWait(time.Minute))
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("ctx ended during the wait: %+v, err=%v; want context.DeadlineExceeded", res, err)
		}
		if err := s.Close(t.Context()); err != nil {
			t.Error(err)
		}
	})
}

// RunIfLeader never hands fn a spent lease: when opening the session took
// most of the lease, the lease is renewed before fn runs, and fn's context
// is live when fn starts.
func TestRunIfLeaderNeverRunsWithSpentLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &faulty{Backend: memory.New(), openDelay: map[string]time.Duration{"a": 9500 * time.Millisecond}}
		var atStart error
		res, err := campaign.RunIfLeader(t.Context(), f, "x", func(ctx context.Context, tok events.Token) (int, error) {
			atStart = ctx.Err()
			return 0, nil
		}, campaign.WithID("a"), campaign.WithTTL(10*time.Second))
		if err != nil || res.Outcome != campaign.Succeeded || atStart != nil {
			t.Errorf("after a 9.5s Open on a 10s lease: %+v, %v, fn's context at start: %v; want a renewed lease", res, err, atStart)
		}
	})
}

// A waiting RunIfLeader keeps its own session alive while it waits, also
// with a lease shorter than its retry pause: it is elected when the lock
// is freed within the wait.
func TestRunIfLeaderWaitKeepsSessionAlive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		s, _ := holding(t, b, "holder", "x")
		closed := make(chan error, 1)
		time.AfterFunc(3*time.Second, func() { closed <- s.Close(context.Background()) })
		res, err := campaign.RunIfLeader(t.Context(), b, "x", answer, campaign.WithTTL(time.Second), campaign.WithWait(10*time.Second))
		if err != nil || res.Outcome != campaign.Succeeded {
			t.Errorf("lock freed after 3s within a 10s wait: %+v, %v; want elected", res, err)
		}
		if err := <-closed; err != nil {
			t.Errorf("closing the holder's session: %v", err)
		}
	})
}
