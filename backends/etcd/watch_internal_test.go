package etcd

import (
	"context"
	"testing"
	"time"

	"github.com/hustings/hustings/backends/etcd/etcdtest"
)

// TestWatchResumesAfterCompaction: a watch whose start revision was
// compacted away reads the revision again, signals (changes may have been
// missed), and goes on signalling from there; its channel is closed when
// its context ends.
func TestWatchResumesAfterCompaction(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	b, err := New(cli)
	if err != nil {
		t.Fatal(err)
	}
	key := b.lockKey("job")
	first, err := b.revision(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := cli.Put(t.Context(), "/other", "x"); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := cli.Put(t.Context(), "/other", "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(t.Context(), resp.Header.Revision); err != nil {
		t.Fatalf("Compact: %v", err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	out := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.pump(ctx, key, first, false, out) // from a compacted revision
	}()
	receive(t, out, "the compaction")
	if _, err := cli.Put(t.Context(), key, "x"); err != nil {
		t.Fatal(err)
	}
	receive(t, out, "a put after the compaction")
	cancel()
	<-done
	if _, ok := <-out; ok {
		t.Fatal("value after the context ended, want the channel closed")
	}
}

// receive fails the test unless out receives a value within 10s.
func receive(t *testing.T, out <-chan struct{}, after string) {
	t.Helper()
	select {
	case _, ok := <-out:
		if !ok {
			t.Fatalf("channel closed, want a signal after %s", after)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no signal within 10s after %s", after)
	}
}
