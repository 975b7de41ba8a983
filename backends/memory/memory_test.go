package memory_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/backendtest"
	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/events"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fakeClock is a Clock that moves only when told to.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func TestContract(t *testing.T) {
	clock := newFakeClock()
	backendtest.Run(t, backendtest.Harness{
		New:     func(*testing.T) backends.Backend { return memory.New(memory.WithClock(clock)) },
		TTL:     time.Second,
		Advance: clock.Advance,
		Delete:  deleteLock,
		Fence:   fencedWrite,
	})
}

// TestContractRealClock runs the suite's real-time path, the one real
// servers take, on the default clock.
func TestContractRealClock(t *testing.T) {
	if testing.Short() {
		t.Skip("sleeps for a few seconds")
	}
	backendtest.Run(t, backendtest.Harness{
		New:    func(*testing.T) backends.Backend { return memory.New() },
		TTL:    time.Second, // shorter, a busy machine's scheduling delays outlast it
		Delete: deleteLock,
		Fence:  fencedWrite,
	})
}

// fencedWrite makes a write under the memory backend's fence.
func fencedWrite(ctx context.Context, b backends.Backend, name string, token events.Token) error {
	return b.(*memory.Backend).Fence(ctx, name, token, func() error { return nil })
}

// A refused fence never runs the write; an admitted one returns the
// write's error.
func TestFenceRunsWriteOnlyWhenHeld(t *testing.T) {
	b := memory.New()
	s := open(t, b, "a", time.Minute)
	tok, err := s.Acquire(t.Context(), "job", 0)
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	write := func() error { ran++; return errors.New("disk full") }
	if err := b.Fence(t.Context(), "job", tok+1, write); !errors.Is(err, backends.ErrNotHeld) || ran != 0 {
		t.Fatalf("fence under a wrong token: %v, write ran %d times; want ErrNotHeld, never", err, ran)
	}
	if err := b.Fence(t.Context(), "job", tok, write); err == nil || err.Error() != "disk full" || ran != 1 {
		t.Fatalf("fence under the token: %v, write ran %d times; want the write's error, once", err, ran)
	}
	if err := b.Fence(t.Context(), "job", tok, nil); !errors.Is(err, backends.ErrInvalid) {
		t.Fatalf("nil write: %v, want ErrInvalid", err)
	}
}

// deleteLock removes a lock behind its holder's back.
func deleteLock(_ *testing.T, b backends.Backend, name string) { b.(*memory.Backend).Delete(name) }

// TestPartitionLosesSession: a partitioned candidate's calls block until
// their context ends and fail with ErrUnavailable; its renewals never
// arrive, so its session expires and another candidate takes its lock.
func TestPartitionLosesSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		ctx := t.Context()
		a := open(t, b, "a", 5*time.Second)
		tok := backendtest.Acquire(t, a, "job")
		b.Partition("a")

		time.Sleep(4 * time.Second)
		start := time.Now()
		err := callWithin(2*time.Second, a.KeepAlive)
		if !errors.Is(err, backends.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("partitioned KeepAlive: %v, want ErrUnavailable and DeadlineExceeded", err)
		}
		if waited := time.Since(start); waited != 2*time.Second {
			t.Fatalf("partitioned KeepAlive returned after %v, want when its context ended (2s)", waited)
		}
		_, err = b.Open(ctx, "b", 5*time.Second) // other candidates are not cut off
		if err != nil {
			t.Fatalf("Open of another candidate during the partition: %v", err)
		}
		_, err = openWithin(b, "a", time.Second)
		if !errors.Is(err, backends.ErrUnavailable) {
			t.Fatalf("Open of the partitioned candidate: %v, want ErrUnavailable", err)
		}

		b.Heal("a")
		if err := a.KeepAlive(ctx); !errors.Is(err, backends.ErrSessionLost) {
			t.Fatalf("KeepAlive after the heal: %v, want ErrSessionLost: renewals during the partition never arrived", err)
		}
		c := open(t, b, "c", 5*time.Second)
		if next := backendtest.Acquire(t, c, "job"); next <= tok {
			t.Fatalf("token after the partition = %d, want > %d", next, tok)
		}
	})
}

// TestHealWakesBlockedCall: a call blocked by a partition goes on when the
// partition heals, and reaches the backend then.
func TestHealWakesBlockedCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		a := open(t, b, "a", 5*time.Second)
		b.Partition("a")
		done := make(chan error, 1)
		go func() { done <- a.KeepAlive(t.Context()) }()
		time.Sleep(4 * time.Second)
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("partitioned KeepAlive returned %v before the heal", err)
		default:
		}
		b.Heal("a")
		if err := <-done; err != nil {
			t.Fatalf("KeepAlive woken by the heal: %v", err)
		}
		time.Sleep(4 * time.Second) // 8s after Open: alive only if the renewal arrived at 4s
		if err := a.KeepAlive(t.Context()); err != nil {
			t.Fatalf("KeepAlive 4s after the healed one: %v", err)
		}
	})
}

// TestPartitionAll: every call blocks, Holder and Watch included, until
// HealAll.
func TestPartitionAll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		a := open(t, b, "a", time.Minute)
		tok := backendtest.Acquire(t, a, "job")
		b.PartitionAll()
		calls := map[string]func(ctx context.Context) error{
			"Open":      func(ctx context.Context) error { _, err := b.Open(ctx, "b", time.Minute); return err },
			"Holder":    func(ctx context.Context) error { _, err := b.Holder(ctx, "job"); return err },
			"Watch":     func(ctx context.Context) error { _, err := b.Watch(ctx, "job"); return err },
			"Acquire":   func(ctx context.Context) error { _, err := a.Acquire(ctx, "other", 0); return err },
			"KeepAlive": a.KeepAlive,
			"Release":   func(ctx context.Context) error { return a.Release(ctx, "job", tok, 0) },
		}
		for name, call := range calls {
			if err := callWithin(time.Second, call); !errors.Is(err, backends.ErrUnavailable) {
				t.Errorf("%s during PartitionAll: %v, want ErrUnavailable", name, err)
			}
		}
		done := make(chan error, 1)
		go func() { _, err := b.Holder(t.Context(), "job"); done <- err }()
		synctest.Wait()
		b.HealAll()
		if err := <-done; err != nil {
			t.Fatalf("Holder woken by HealAll: %v", err)
		}
		if h, err := b.Holder(t.Context(), "job"); err != nil || h.ID != "a" || h.Token != tok {
			t.Fatalf("Holder after HealAll = %+v, %v; want a, %d", h, err, tok)
		}
	})
}

// TestPartitionedClose: a Close that never reaches the backend closes the
// session for its owner, but its locks live until the TTL.
func TestPartitionedClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		a := open(t, b, "a", 5*time.Second)
		backendtest.Acquire(t, a, "job")
		b.Partition("a")
		if err := callWithin(time.Second, a.Close); !errors.Is(err, backends.ErrUnavailable) {
			t.Fatalf("partitioned Close: %v, want ErrUnavailable", err)
		}
		b.Heal("a")
		if err := a.KeepAlive(t.Context()); !errors.Is(err, backends.ErrSessionClosed) {
			t.Fatalf("KeepAlive after Close: %v, want ErrSessionClosed", err)
		}
		if err := a.Close(t.Context()); err != nil {
			t.Fatalf("second Close: %v", err)
		}
		if h, _ := b.Holder(t.Context(), "job"); h.ID != "a" {
			t.Fatalf("Holder right after a Close that never arrived = %+v, want a", h)
		}
		time.Sleep(5 * time.Second)
		if h, _ := b.Holder(t.Context(), "job"); h.ID != "" {
			t.Fatalf("Holder after the TTL = %+v, want free", h)
		}
	})
}

// TestWatchSignals: a watch is signalled when a KeepAlive finds the
// holder's session expired, but not by the expiry itself.
func TestWatchSignals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		a := open(t, b, "a", 5*time.Second)
		backendtest.Acquire(t, a, "job")
		ch, err := b.Watch(t.Context(), "job")
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(6 * time.Second)
		select {
		case <-ch:
			t.Fatal("signal without a call: expiry is lazy")
		default:
		}
		if err := a.KeepAlive(t.Context()); !errors.Is(err, backends.ErrSessionLost) {
			t.Fatalf("KeepAlive after the TTL: %v, want ErrSessionLost", err)
		}
		select {
		case <-ch:
		default:
			t.Fatal("no signal after the failed KeepAlive")
		}
	})
}

// open opens a session in a test, failing it on error.
func open(t *testing.T, b *memory.Backend, id string, ttl time.Duration) backends.Session {
	t.Helper()
	s, err := b.Open(t.Context(), id, ttl)
	if err != nil {
		t.Fatalf("Open(%q): %v", id, err)
	}
	return s
}

// callWithin calls call with a context that ends after d.
func callWithin(d time.Duration, call func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return call(ctx)
}

// openWithin opens a session for id with a context that ends after d.
func openWithin(b *memory.Backend, id string, d time.Duration) (backends.Session, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return b.Open(ctx, id, time.Minute)
}

// TestGroups runs the group scenario of the contract suite in real time.
func TestGroups(t *testing.T) {
	backendtest.RunGroups(t, backendtest.Harness{
		New: func(*testing.T) backends.Backend { return memory.New() },
		TTL: time.Second,
	})
}

// TestStorm starts a storm of campaigns on one shared session at once
// (see backendtest.RunStorm).
func TestStorm(t *testing.T) {
	backendtest.RunStorm(t, backendtest.Harness{
		New: func(*testing.T) backends.Backend { return memory.New() },
		TTL: time.Second,
	}, 0)
}
