package etcd

import (
	"testing"
	"time"

	"github.com/hustings/hustings/backends/etcd/etcdtest"
)

// TestKeepAliveReadsWhatTheWatchSkipped: once the loss watch resumed past
// revisions it did not see (its start was compacted away), it confirms
// no lock until a KeepAlive has read them all at a revision at least as
// late: then it does again.
func TestKeepAliveReadsWhatTheWatchSkipped(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	b, err := New(cli)
	if err != nil {
		t.Fatal(err)
	}
	bs, err := b.Open(t.Context(), "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	s := bs.(*session)
	t.Cleanup(func() { _ = s.Close(t.Context()) })
	s.Losses()
	tok, err := s.Acquire(t.Context(), "job", 0)
	if err != nil {
		t.Fatal(err)
	}
	// The watch starts beside the calls (Losses does not wait for it):
	// on a busy machine the first KeepAlives may come before it is up,
	// and read the locks themselves. Once it is, a KeepAlive leaves it
	// able to confirm them.
	for limit := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if err := s.KeepAlive(t.Context()); err != nil {
			t.Fatal(err)
		}
		if s.mark.usable() {
			break
		}
		if time.Now().After(limit) {
			t.Fatal("the loss watch cannot confirm the locks after KeepAlives for 30s")
		}
	}
	s.mark.skipped(int64(tok)) // as if compacted away up to the store's revision, the acquire's
	if s.mark.usable() {
		t.Fatal("the loss watch confirms the locks although it skipped changes")
	}
	if err := s.KeepAlive(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !s.mark.usable() {
		t.Fatal("the loss watch still cannot confirm the locks after a KeepAlive read them")
	}
	if lost := s.Lost(); lost != nil {
		t.Fatalf("Lost() = %v, want nil", lost)
	}
}
