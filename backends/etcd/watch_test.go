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
