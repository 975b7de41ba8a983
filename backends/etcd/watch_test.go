package etcd_test

import (
	"context"
	"testing"
	"time"

	"github.com/hustings/hustings/backends/backendtest"
	"github.com/hustings/hustings/backends/etcd/etcdtest"
)

// TestWatchSurvivesCompaction: a watcher cut off while the lock changes
// and the store is compacted gets a signal when it reconnects, and goes on
// watching, instead of seeing its channel closed. (The watcher's
// connection is cut by closing its link, and it reconnects when its
// client is given the server's own address.)
func TestWatchSurvivesCompaction(t *testing.T) {
	srv := etcdtest.Start(t)
	direct := srv.Client(t)
	link, linked := srv.Linked(t)
	b := newBackend(t, direct)
	w := newBackend(t, linked)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ch, err := w.Watch(ctx, "job")
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}

	link.Close()
	a := open(t, b, "a", time.Minute)
	tok := backendtest.Acquire(t, a, "job")
	if err := a.Release(t.Context(), "job", tok, 0); err != nil {
		t.Fatal(err)
	}
	resp, err := direct.Put(t.Context(), "/elsewhere", "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := direct.Compact(t.Context(), resp.Header.Revision); err != nil {
		t.Fatalf("Compact: %v", err)
	}
	linked.SetEndpoints(srv.Addr())
	wantSignal(t, ch, "reconnecting past a compaction")

	backendtest.Acquire(t, a, "job")
	wantSignal(t, ch, "an Acquire after the compaction")
	cancel()
	for range ch {
	}
}

// wantSignal fails the test unless ch receives a value within 15s.
func wantSignal(t *testing.T, ch <-chan struct{}, after string) {
	t.Helper()
	select {
	case _, ok := <-ch:
		if !ok {
			t.Fatalf("watch channel closed, want a signal after %s", after)
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("no watch signal within 15s after %s", after)
	}
}

// TestWatchReleasesSignalsReleasesAlone: a waiter's WatchReleases is
// woken by a Release and by the end of a lock's lease, and not by a take
// of the lock, nor by a release that keeps it held for a while.
func TestWatchReleasesSignalsReleasesAlone(t *testing.T) {
	b := newBackend(t, etcdtest.Start(t).Client(t))
	a, c := open(t, b, "a", time.Minute), open(t, b, "c", time.Minute)
	tok := backendtest.Acquire(t, a, "job")
	if _, err := c.Acquire(t.Context(), "job", 0); err == nil {
		t.Fatal("Acquire of a held lock succeeded")
	}
	ch, err := b.WatchReleases(t.Context(), "job")
	if err != nil {
		t.Fatalf("WatchReleases: %v", err)
	}
	if err := a.Release(t.Context(), "job", tok, 0); err != nil {
		t.Fatal(err)
	}
	wantSignal(t, ch, "a Release")

	tok = backendtest.Acquire(t, c, "job")
	if err := c.Release(t.Context(), "job", tok, time.Minute); err != nil { // held by nobody for a minute
		t.Fatal(err)
	}
	select {
	case <-ch:
		t.Fatal("WatchReleases signalled a take, or a release with a hold")
	case <-time.After(500 * time.Millisecond): // the take's event would have come by now
	}

	if _, err := a.Acquire(t.Context(), "leased", time.Second); err != nil {
		t.Fatal(err)
	}
	leased, err := b.WatchReleases(t.Context(), "leased")
	if err != nil {
		t.Fatalf("WatchReleases: %v", err)
	}
	wantSignal(t, leased, "the end of the lock's lease of 1 s")
	backendtest.Acquire(t, c, "leased")
}
