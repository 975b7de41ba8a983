package nats_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/nats/natstest"
)

// TestCrashedHolderIsPushed: a holder that stops renewing (a crash) frees
// its lock when the server expires its session record, and the watchers
// of the lock are told by the expiry's marker: nothing writes the lock's
// record.
func TestCrashedHolderIsPushed(t *testing.T) {
	srv := natstest.Start(t)
	b := newBackend(t, srv.URL())
	ctx := t.Context()
	start := time.Now() // before the session's one write
	a, err := b.Open(ctx, "a", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Acquire(ctx, "crash", 0); err != nil {
		t.Fatal(err)
	}
	ch, err := b.Watch(ctx, "crash")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatal("no wake-up within 30s of the holder's last write")
	}
	if h, err := b.Holder(ctx, "crash"); err != nil || h.ID != "" {
		t.Fatalf("Holder when woken = %+v, %v; want free", h, err)
	}
	if since := time.Since(start); since < time.Second {
		t.Fatalf("woken %v after the holder's last write, before its TTL of 1s", since)
	}
	t.Logf("woken %v after the holder's last write (TTL 1s)", time.Since(start))
}

// TestTakesRacingReleases is nats-server #5162 at the backend: sessions
// that take and release one lock at once, over its delete markers, get a
// token or ErrHeld, never another error, and never hold it two at once.
func TestTakesRacingReleases(t *testing.T) {
	srv := natstest.Start(t)
	b := newBackend(t, srv.URL())
	ctx := t.Context()
	var holders, won atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		s, err := b.Open(ctx, "racer", 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close(ctx)
		wg.Go(func() {
			for range 30 {
				tok, err := s.Acquire(ctx, "race", 0)
				if errors.Is(err, backends.ErrHeld) {
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				won.Add(1)
				if holders.Add(1) != 1 {
					errs <- errors.New("two sessions hold the lock at once")
				}
				holders.Add(-1)
				if err := s.Release(ctx, "race", tok, 0); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if won.Load() == 0 {
		t.Fatal("nobody took the lock")
	}
}
