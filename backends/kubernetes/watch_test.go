package kubernetes_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/hustings/hustings/backends/backendtest"
	"github.com/hustings/hustings/backends/kubernetes"
	"github.com/hustings/hustings/internal/testserver"
)

// watchLock watches name on b until the test ends.
func watchLock(t *testing.T, b *kubernetes.Backend, name string) <-chan struct{} {
	t.Helper()
	ch, err := b.Watch(t.Context(), name)
	if err != nil {
		t.Fatalf("Watch(%q): %v", name, err)
	}
	return ch
}

// signalled fails the test unless ch receives a value within 10 s.
func signalled(t *testing.T, ch <-chan struct{}, after string) {
	t.Helper()
	select {
	case _, ok := <-ch:
		if !ok {
			t.Fatalf("watch closed, want a signal after %s", after)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no signal within 10s after %s", after)
	}
}

// drain empties ch of a pending signal.
func drain(ch <-chan struct{}) {
	select {
	case <-ch:
	default:
	}
}

// TestWatchIsShared: a hundred watches of a Backend, on fifty locks, are
// served by one LIST and one WATCH request, and a release wakes the
// watches of its lock.
func TestWatchIsShared(t *testing.T) {
	var calls methodCount
	cs := client(t, &calls)
	b := newBackend(t, cs, namespace(t, cs))
	a := backendtest.Open(t, b, "a", 10*time.Second)
	tok, err := a.Acquire(t.Context(), "lock-0", 0)
	if err != nil {
		t.Fatal(err)
	}
	var first []<-chan struct{}
	for i := range 100 {
		ch := watchLock(t, b, fmt.Sprintf("lock-%d", i%50))
		if i%50 == 0 {
			first = append(first, ch)
		}
	}
	if l, w := calls.list.Load(), calls.watch.Load(); l != 1 || w > 1 {
		t.Fatalf("100 watches made %d LIST and %d WATCH requests, want 1 and at most 1", l, w)
	}
	for _, ch := range first {
		drain(ch)
	}
	if err := a.Release(t.Context(), "lock-0", tok, 0); err != nil {
		t.Fatal(err)
	}
	for _, ch := range first {
		signalled(t, ch, "Release")
	}
	if w := calls.watch.Load(); w != 1 {
		t.Fatalf("%d WATCH requests, want 1", w)
	}
}

// TestWatchResumes: when the server ends a watch request, the watch
// resumes from the last resourceVersion it saw, without listing again,
// and keeps waking its watches.
func TestWatchResumes(t *testing.T) {
	var calls methodCount
	cs := client(t, &calls)
	b := newBackend(t, cs, namespace(t, cs))
	kubernetes.SetWatchTimeout(b, time.Second)
	a := backendtest.Open(t, b, "a", 10*time.Second)
	ch := watchLock(t, b, "resumed")
	testserver.Eventually(t, "the watch resumed twice", 20*time.Second, func() bool { return calls.watch.Load() >= 3 })
	if l := calls.list.Load(); l != 1 {
		t.Fatalf("%d LIST requests after the watch resumed, want 1 (resume from the resourceVersion seen)", l)
	}
	drain(ch)
	if _, err := a.Acquire(t.Context(), "resumed", 0); err != nil {
		t.Fatal(err)
	}
	signalled(t, ch, "Acquire, after the watch resumed")
}

// TestWatchRelistsOnGone: a watch that the server can no longer resume
// (410 Gone, in the stream) lists again, signals every watch (a change
// may have been missed), and watches on.
func TestWatchRelistsOnGone(t *testing.T) {
	var calls methodCount
	cs := client(t, &calls)
	b := newBackend(t, cs, namespace(t, cs))
	kubernetes.SetWatchTimeout(b, time.Second)
	a := backendtest.Open(t, b, "a", 10*time.Second)
	ch := watchLock(t, b, "relisted")
	drain(ch)
	calls.expire.Store(true)
	signalled(t, ch, "410 Gone, with no change")
	if calls.expire.Load() || calls.list.Load() != 2 {
		t.Fatalf("after 410 Gone: %d LIST requests (want 2), injected 410 still pending: %v", calls.list.Load(), calls.expire.Load())
	}
	drain(ch)
	if _, err := a.Acquire(t.Context(), "relisted", 0); err != nil {
		t.Fatal(err)
	}
	signalled(t, ch, "Acquire, after the relist")
}

// TestWatchEndsWhenRelistFails: a watch the server can no longer resume
// (410 Gone) and whose LIST then fails, again and again, is broken:
// every Watch channel is closed, so that its owner watches again (and
// polls meanwhile), rather than left open with nothing feeding it.
func TestWatchEndsWhenRelistFails(t *testing.T) {
	var calls methodCount
	cs := client(t, &calls)
	b := newBackend(t, cs, namespace(t, cs))
	kubernetes.SetWatchTimeout(b, time.Second)
	ch := watchLock(t, b, "unlistable")
	calls.failing.Store(true)
	deadline := time.After(30 * time.Second)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatalf("watch still open 30s after its LISTs began to fail (%d LISTs)", calls.list.Load())
		}
	}
}

// TestWatchSignalsExpiry: a holder that stops renewing wakes the
// watchers of its lock when this process judges its session expired,
// with nothing written to the lock; the lock is then free.
func TestWatchSignalsExpiry(t *testing.T) {
	cs := client(t, nil)
	b := newBackend(t, cs, namespace(t, cs))
	const ttl = time.Second
	a := backendtest.Open(t, b, "a", ttl)
	if _, err := a.Acquire(t.Context(), "expiring", 0); err != nil {
		t.Fatal(err)
	}
	ch := watchLock(t, b, "expiring")
	drain(ch)
	start := time.Now()
	signalled(t, ch, "the holder's session expired")
	if waited := time.Since(start); waited > 3*ttl {
		t.Fatalf("signal %v after the watch began, want within about the TTL %v", waited, ttl)
	}
	h, err := b.Holder(t.Context(), "expiring")
	if err != nil || h.ID != "" {
		t.Fatalf("Holder after the signal = %+v, %v; want free", h, err)
	}
}
