package zookeeper_test

import (
	"errors"
	"testing"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/zookeeper"
)

// wantHeld fails the test unless s's Acquire of name finds it held.
func wantHeld(t *testing.T, s backends.Session, name string) {
	t.Helper()
	if _, err := s.Acquire(t.Context(), name, 0); !errors.Is(err, backends.ErrHeld) {
		t.Fatalf("%s: Acquire(%q): %v, want ErrHeld", s.ID(), name, err)
	}
}

// TestWaiterReadsLiveHolderOnce: a waiter next in line reads the holder's
// nodes when it first finds it; its next try, while the holder's session
// is still young on the server's clock, is one listing.
func TestWaiterReadsLiveHolderOnce(t *testing.T) {
	const timeout = 4 * time.Second
	srv := server(t)
	wb := newBackend(t, dial(t, srv.Addr(), timeout), timeout)
	calls := zookeeper.CountCalls(wb)
	h := open(t, newBackend(t, dial(t, srv.Addr(), timeout), timeout), "holder", timeout)
	w := open(t, wb, "waiter", timeout)
	acquire(t, h, "job")
	wantHeld(t, w, "job")
	calls.Store(0)
	wantHeld(t, w, "job")
	if n := calls.Load(); n != 1 {
		t.Fatalf("the waiter's second try made %d requests, want 1 (the listing)", n)
	}
}

// TestRememberedHolderStillExpires: a holder a waiter has found alive,
// and whose session then stops renewing, is found dead once its TTL has
// passed on the server's clock: what the waiter remembers never keeps a
// dead holder alive.
func TestRememberedHolderStillExpires(t *testing.T) {
	const timeout = 4 * time.Second
	const ttl = 500 * time.Millisecond
	srv := server(t)
	h := open(t, newBackend(t, dial(t, srv.Addr(), timeout), timeout), "holder", ttl)
	w := open(t, newBackend(t, dial(t, srv.Addr(), timeout), timeout), "waiter", timeout)
	tok := acquire(t, h, "job")
	wantHeld(t, w, "job")
	wantHeld(t, w, "job") // judged from what it read
	var next int64
	waitUntil(t, "the waiter takes the lock of the expired holder", func() bool {
		got, err := w.Acquire(t.Context(), "job", 0)
		if err != nil && !errors.Is(err, backends.ErrHeld) {
			t.Fatalf("Acquire: %v", err)
		}
		next = int64(got)
		return err == nil
	})
	if next <= int64(tok) {
		t.Fatalf("token %d after the expiry, want > %d", next, tok)
	}
}
