package zookeeper_test

import (
	"errors"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/backendtest"
	"github.com/hustings/hustings/events"
)

// TestRivalTakesDeletedLock: a lock node deleted behind its holder's back
// is taken by a rival on another conn; the holder's next KeepAlive
// succeeds and reports the lock lost, its other lock is still its own, and
// its Acquire finds the lock held by the rival.
func TestRivalTakesDeletedLock(t *testing.T) {
	const timeout = 4 * time.Second
	conn := dial(t, server(t).Addr(), timeout)
	a := backendtest.Open(t, newBackend(t, conn, timeout), "a", timeout)
	rivals := newBackend(t, dial(t, server(t).Addr(), timeout), timeout)
	rival := backendtest.Open(t, rivals, "rival", timeout)
	tok := backendtest.Acquire(t, a, "job")
	kept := backendtest.Acquire(t, a, "other")

	deleteHolder(t, conn, "job")
	next := backendtest.Acquire(t, rival, "job")
	if next <= tok {
		t.Fatalf("rival's token %d, want > %d", next, tok)
	}
	if err := a.KeepAlive(t.Context()); err != nil {
		t.Fatalf("KeepAlive after the delete: %v", err)
	}
	if got, want := a.Lost(), map[string]events.Token{"job": tok}; !maps.Equal(got, want) {
		t.Fatalf("Lost() = %v, want %v", got, want)
	}
	wantHolder(t, rivals, "job", "rival", next)
	wantHolder(t, rivals, "other", "a", kept)
	if _, err := a.Acquire(t.Context(), "job", 0); !errors.Is(err, backends.ErrHeld) {
		t.Fatalf("a's Acquire of the lock the rival took: %v, want ErrHeld", err)
	}
}

// TestKeepAliveFindsEveryDeletedLock: a ZooKeeper multi names only the
// first check that failed; one KeepAlive still finds every deleted lock,
// at one more request each, and the session's other locks stay held.
func TestKeepAliveFindsEveryDeletedLock(t *testing.T) {
	const timeout = 4 * time.Second
	srv := server(t)
	conn := dial(t, srv.Addr(), timeout)
	b := newBackend(t, conn, timeout)
	s := backendtest.Open(t, b, "a", timeout)
	toks := make(map[string]events.Token)
	for i := range 10 {
		name := fmt.Sprintf("lock-%d", i)
		toks[name] = backendtest.Acquire(t, s, name)
	}
	want := make(map[string]events.Token)
	for _, name := range []string{"lock-2", "lock-5", "lock-9"} {
		deleteHolder(t, conn, name)
		want[name] = toks[name]
	}
	before := packets(t, srv)
	if err := s.KeepAlive(t.Context()); err != nil {
		t.Fatalf("KeepAlive after the deletes: %v", err)
	}
	got := packets(t, srv) - before
	if lost := s.Lost(); !maps.Equal(lost, want) {
		t.Fatalf("Lost() = %v, want %v", lost, want)
	}
	// One request, one more per lock found gone; the second mntr counts
	// itself, and a ping may come in between.
	t.Logf("a KeepAlive that finds %d of %d locks gone: %d packets received by the server", len(want), len(toks), got)
	if n := int64(1 + len(want)); got < n || got > n+3 {
		t.Fatalf("the KeepAlive cost %d requests, want %d (+ a ping)", got, n)
	}
	if err := s.KeepAlive(t.Context()); err != nil {
		t.Fatal(err)
	}
	if lost := s.Lost(); !maps.Equal(lost, want) {
		t.Fatalf("Lost() after another KeepAlive = %v, want %v", lost, want)
	}
	for name, tok := range toks {
		if _, lost := want[name]; !lost {
			wantHolder(t, b, name, "a", tok)
		}
	}
}

// TestKeepAliveFindsDeletedLocksInEveryBatch: with more locks than one
// transaction checks, deleted locks are found whichever transaction
// checks them.
func TestKeepAliveFindsDeletedLocksInEveryBatch(t *testing.T) {
	if testing.Short() {
		t.Skip("takes 1,001 locks")
	}
	const timeout = 4 * time.Second
	conn := dial(t, server(t).Addr(), timeout)
	b := newBackend(t, conn, timeout)
	s := backendtest.Open(t, b, "a", timeout)
	acquireAll(t, s, 0, 1001)
	want := make(map[string]events.Token)
	for _, name := range []string{"lock-0", "lock-500", "lock-1000"} {
		h, err := b.Holder(t.Context(), name)
		if err != nil {
			t.Fatal(err)
		}
		deleteHolder(t, conn, name)
		want[name] = h.Token
	}
	if err := s.KeepAlive(t.Context()); err != nil {
		t.Fatalf("KeepAlive after the deletes: %v", err)
	}
	if lost := s.Lost(); !maps.Equal(lost, want) {
		t.Fatalf("Lost() = %v, want %v", lost, want)
	}
}

// wantHolder fails the test unless b reports name held by id under tok.
func wantHolder(t *testing.T, b backends.Backend, name, id string, tok events.Token) {
	t.Helper()
	if h, err := b.Holder(t.Context(), name); err != nil || h.ID != id || h.Token != tok {
		t.Fatalf("Holder(%q) = %+v, %v; want %s under %d", name, h, err, id, tok)
	}
}
