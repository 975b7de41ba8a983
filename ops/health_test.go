package ops_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/ops"
)

const ttl = time.Second

// probe returns the status and body /healthz answers with.
func probe(h http.Handler) (int, string) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	return rec.Code, strings.TrimSpace(rec.Body.String())
}

// start runs a campaign for name on b with opts until the test ends.
func start(t *testing.T, b *memory.Backend, name, id string, work func(ctx context.Context, term events.Event) error, opts ...campaign.Option) *campaign.Campaign {
	t.Helper()
	c, err := campaign.New(b, name, append([]campaign.Option{campaign.WithID(id), campaign.WithTTL(ttl), campaign.WithRetry(ttl / 4)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	wg.Go(func() {
		run := func() error { return c.Run(ctx) }
		if work != nil {
			run = func() error { return campaign.WhileLeader(ctx, c, work) }
		}
		if err := run(); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: Run = %v, want context.Canceled", id, err)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	return c
}

// A leader whose work returns with its term and a follower both pass,
// for many TTLs of renewals, through both the handler and Check.
func TestHealthPassesForLeaderAndFollower(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, err := ops.NewHealth(time.Second)
		if err != nil {
			t.Fatal(err)
		}
		b := memory.New()
		terms := 0
		work := func(ctx context.Context, _ events.Event) error {
			terms++
			<-ctx.Done()
			return nil
		}
		leader := start(t, b, "job", "a", work, ops.WithHealth(h))
		synctest.Wait()
		start(t, b, "job", "b", work, ops.WithHealth(h))
		for range 20 {
			time.Sleep(ttl / 2)
			synctest.Wait()
			if code, body := probe(h); code != http.StatusOK || body != "ok" {
				t.Fatalf("/healthz = %d %q, want 200 ok", code, body)
			}
		}
		if !leader.State().Leader || terms != 1 {
			t.Fatalf("leader's state %+v after %d terms; want one term held throughout", leader.State(), terms)
		}
		if err := leader.Resign(t.Context()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * ttl) // the follower takes over, the old leader follows
		synctest.Wait()
		if err := h.Check(t.Context()); err != nil || terms != 2 {
			t.Fatalf("after a handover (%d terms) Check = %v, want nil after 2 terms", terms, err)
		}
	})
}

// Work that ignores its term's end fails the probe once the grace has
// passed since the term ended, not before; when it returns, the probe
// passes again.
func TestHealthFailsForWorkStuckPastItsTerm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const grace = 3 * time.Second
		h, err := ops.NewHealth(grace)
		if err != nil {
			t.Fatal(err)
		}
		unstick := make(chan struct{})
		release := sync.OnceFunc(func() { close(unstick) })
		defer release() // a failing test does not leave the work stuck
		started := make(chan struct{}, 1)
		work := func(ctx context.Context, _ events.Event) error {
			started <- struct{}{}
			<-unstick // ignores ctx
			return nil
		}
		c := start(t, memory.New(), "job", "a", work, ops.WithHealth(h), campaign.WithGrace(time.Second))
		<-started
		go func() { _ = c.Resign(context.Background()) }()
		synctest.Wait()
		if c.State().Leader {
			t.Fatal("still leading after Resign")
		}
		ended := time.Now()
		time.Sleep(grace)
		if err := h.Check(t.Context()); err != nil {
			t.Fatalf("at the grace's end Check = %v, want nil", err)
		}
		time.Sleep(time.Millisecond)
		err = h.Check(t.Context())
		if !errors.Is(err, ops.ErrUnhealthy) || !strings.Contains(err.Error(), `"job"`) {
			t.Fatalf("%v after the term ended, Check = %v; want ErrUnhealthy naming the lock", time.Since(ended), err)
		}
		if code, body := probe(h); code != http.StatusServiceUnavailable || !strings.Contains(body, "outlived the term") {
			t.Fatalf("/healthz = %d %q, want 503 saying the work outlived its term", code, body)
		}
		release()
		synctest.Wait()
		if err := h.Check(t.Context()); err != nil {
			t.Fatalf("after the work returned Check = %v, want nil", err)
		}
	})
}

// A one-shot function that outlives its lease fails the probe too.
func TestHealthFailsForOneShotWorkPastItsLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, err := ops.NewHealth(time.Second)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			_, err := campaign.RunIfLeader(context.Background(), memory.New(), "nightly", func(ctx context.Context, _ events.Token) (int, error) {
				time.Sleep(20 * time.Second) // ignores ctx, whose lease is 10s
				return 0, nil
			}, campaign.WithTTL(10*time.Second), ops.WithHealth(h))
			done <- err
		}()
		time.Sleep(9 * time.Second) // the deadline is 9s: the lease less a tenth
		if err := h.Check(t.Context()); err != nil {
			t.Fatalf("within the lease Check = %v", err)
		}
		time.Sleep(time.Second + time.Millisecond)
		if err := h.Check(t.Context()); !errors.Is(err, ops.ErrUnhealthy) || !strings.Contains(err.Error(), `"nightly"`) {
			t.Fatalf("past the lease and the grace Check = %v, want ErrUnhealthy naming the run", err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if err := h.Check(t.Context()); err != nil {
			t.Fatalf("after the run Check = %v", err)
		}
	})
}

func TestHealthRejectsBadInput(t *testing.T) {
	if _, err := ops.NewHealth(-time.Second); !errors.Is(err, campaign.ErrInvalid) {
		t.Errorf("NewHealth(-1s) = %v, want ErrInvalid", err)
	}
	if _, err := campaign.New(memory.New(), "x", ops.WithHealth(nil)); !errors.Is(err, campaign.ErrInvalid) {
		t.Errorf("WithHealth(nil) = %v, want ErrInvalid", err)
	}
	h, err := ops.NewHealth(0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := campaign.Observe(t.Context(), memory.New(), "x", ops.WithHealth(h)); !errors.Is(err, campaign.ErrInvalid) {
		t.Errorf("Observe with WithHealth = %v, want ErrInvalid", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := h.Check(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Check(canceled) = %v, want context.Canceled", err)
	}
}
