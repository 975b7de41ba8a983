package zookeeper_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
)

// TestRivalTakesDeletedLock: a lock node deleted behind its holder's back
// is taken by a rival on another conn; the holder's next KeepAlive
// succeeds and reports the lock lost, its other lock is still its own, and
// its Acquire finds the lock held by the rival.
func TestRivalTakesDeletedLock(t *testing.T) {
	const timeout = 4 * time.Second
	conn := dial(t, server(t).Addr(), timeout)
	a := open(t, newBackend(t, conn, timeout), "a", timeout)
	rivals := newBackend(t, dial(t, server(t).Addr(), timeout), timeout)
	rival := open(t, rivals, "rival", timeout)
	tok := acquire(t, a, "job")
	kept := acquire(t, a, "other")

	deleteHolder(t, conn, "job")
	next := acquire(t, rival, "job")
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
	s := open(t, b, "a", timeout)
	toks := make(map[string]events.Token)
	for i := range 10 {
		name := fmt.Sprintf("lock-%d", i)
		toks[name] = acquire(t, s, name)
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
	s := open(t, b, "a", timeout)
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

// open opens a session for id on b, closed when the test ends.
func open(t *testing.T, b backends.Backend, id string, ttl time.Duration) backends.Session {
	t.Helper()
	s, err := b.Open(t.Context(), id, ttl)
	if err != nil {
		t.Fatalf("Open(%q): %v", id, err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) }) // t.Context() is done by now
	return s
}

// acquire takes name through s, failing the test on any error.
func acquire(t *testing.T, s backends.Session, name string) events.Token {
	t.Helper()
	tok, err := s.Acquire(t.Context(), name, 0)
	if err != nil {
		t.Fatalf("%s: Acquire(%q): %v", s.ID(), name, err)
	}
	return tok
}

// wantHolder fails the test unless b reports name held by id under tok.
func wantHolder(t *testing.T, b backends.Backend, name, id string, tok events.Token) {
	t.Helper()
	if h, err := b.Holder(t.Context(), name); err != nil || h != (backends.Holder{ID: id, Token: tok}) {
		t.Fatalf("Holder(%q) = %+v, %v; want %s under %d", name, h, err, id, tok)
	}
}
