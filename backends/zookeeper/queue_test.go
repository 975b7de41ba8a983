package zookeeper_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/backendtest"
	"github.com/hustings/hustings/backends/zookeeper"
	"github.com/hustings/hustings/events"
)

// queueTimeout is the session timeout of the conns of the queue tests,
// and the TTL of their sessions unless a test says otherwise.
const queueTimeout = 4 * time.Second

// ownBackend returns a Backend on a conn of its own to the shared server,
// as in a process of its own.
func ownBackend(t *testing.T) *zookeeper.Backend {
	t.Helper()
	return newBackend(t, dial(t, server(t).Addr(), queueTimeout), queueTimeout)
}

// wantHeld fails the test unless s's Acquire of name finds it held.
func wantHeld(t *testing.T, s backends.Session, name string) {
	t.Helper()
	if _, err := s.Acquire(t.Context(), name, 0); !errors.Is(err, backends.ErrHeld) {
		t.Fatalf("%s: Acquire(%q): %v, want ErrHeld", s.ID(), name, err)
	}
}

// acquireOnceFree retries s's Acquire of name, which finds it held, until
// it is granted (what says what the test waits for), and returns the token.
func acquireOnceFree(t *testing.T, s backends.Session, name, what string) events.Token {
	t.Helper()
	var tok events.Token
	waitUntil(t, what, func() bool {
		var err error
		tok, err = s.Acquire(t.Context(), name, 0)
		if err != nil && !errors.Is(err, backends.ErrHeld) {
			t.Fatalf("Acquire: %v", err)
		}
		return err == nil
	})
	return tok
}

// TestWaiterReadsLiveHolderOnce: a waiter next in line reads the holder's
// nodes when it first finds it; its next try, while the holder's session
// is still young on the server's clock, is one listing.
func TestWaiterReadsLiveHolderOnce(t *testing.T) {
	wb := ownBackend(t)
	calls := zookeeper.CountCalls(wb)
	h := backendtest.Open(t, ownBackend(t), "holder", queueTimeout)
	w := backendtest.Open(t, wb, "waiter", queueTimeout)
	backendtest.Acquire(t, h, "job")
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
	const ttl = 500 * time.Millisecond
	h := backendtest.Open(t, ownBackend(t), "holder", ttl)
	w := backendtest.Open(t, ownBackend(t), "waiter", queueTimeout)
	tok := backendtest.Acquire(t, h, "job")
	wantHeld(t, w, "job")
	wantHeld(t, w, "job") // judged from what it read
	next := acquireOnceFree(t, w, "job", "the waiter takes the lock of the expired holder")
	if next <= tok {
		t.Fatalf("token %d after the expiry, want > %d", next, tok)
	}
}

// TestWaiterWatchesFromItsListing: a waiter's Watch, right after its
// Acquire found the lock held, sets its watch from that Acquire's listing
// (one request); once woken and granted, the waiter's Acquire is one
// listing, and the watch, ended by then, sets no new one.
func TestWaiterWatchesFromItsListing(t *testing.T) {
	wb := ownBackend(t)
	calls := zookeeper.CountCalls(wb)
	h := backendtest.Open(t, ownBackend(t), "holder", queueTimeout)
	w := backendtest.Open(t, wb, "waiter", queueTimeout)
	tok := backendtest.Acquire(t, h, "job")
	wantHeld(t, w, "job")
	calls.Store(0)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ch, err := wb.Watch(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("Watch made %d requests, want 1 (the watch on the holder)", n)
	}
	if err := h.Release(t.Context(), "job", tok, 0); err != nil {
		t.Fatal(err)
	}
	woken(t, ch, "the waiter after the release")
	backendtest.Acquire(t, w, "job")
	cancel()
	for range ch { // until the watch's goroutine returns
	}
	if n := calls.Load(); n != 2 {
		t.Fatalf("Watch, wake-up and Acquire made %d requests, want 2 (the watch, the listing)", n)
	}
}

// TestWatchWithoutReactionWakesAgain: a watch whose receiver does not
// look through the watching Backend sets its next watch from a listing of
// its own, and still wakes the receiver for what changed since the signal
// it took: here another candidate's acquire and release.
func TestWatchWithoutReactionWakesAgain(t *testing.T) {
	ob := ownBackend(t)
	a := backendtest.Open(t, ownBackend(t), "a", queueTimeout)
	b := backendtest.Open(t, ownBackend(t), "b", queueTimeout)
	tok := backendtest.Acquire(t, a, "job")
	ch, err := ob.Watch(t.Context(), "job")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Release(t.Context(), "job", tok, 0); err != nil {
		t.Fatal(err)
	}
	woken(t, ch, "the observer after a's release")
	tok = backendtest.Acquire(t, b, "job")
	if err := b.Release(t.Context(), "job", tok, 0); err != nil {
		t.Fatal(err)
	}
	woken(t, ch, "the observer after b's release")
}

// TestWaiterBehindWaiterListsOnly: a candidate that joins a queue behind
// another waiter finds the lock held without reading the holder (the
// waiter next in line judges it): its node's creation and one listing;
// its next try, before judgeEvery has passed, is one listing.
func TestWaiterBehindWaiterListsOnly(t *testing.T) {
	wb := ownBackend(t)
	zookeeper.JudgeEvery(wb, time.Hour) // however slow the machine
	calls := zookeeper.CountCalls(wb)
	h := backendtest.Open(t, ownBackend(t), "holder", queueTimeout)
	next := backendtest.Open(t, ownBackend(t), "next", queueTimeout)
	w := backendtest.Open(t, wb, "waiter", queueTimeout)
	backendtest.Acquire(t, h, "job")
	wantHeld(t, next, "job")
	calls.Store(0)
	wantHeld(t, w, "job")
	wantHeld(t, w, "job")
	if n := calls.Load(); n != 3 {
		t.Fatalf("the waiter's two tries made %d requests, want 3 (its node, two listings)", n)
	}
}

// TestWaiterBehindDeadNodesTakesOver: a waiter queued behind a holder and
// a waiter whose sessions both stop renewing judges them at its later
// tries, deletes both once their TTL has passed, and takes the lock.
func TestWaiterBehindDeadNodesTakesOver(t *testing.T) {
	const ttl = 500 * time.Millisecond
	h := backendtest.Open(t, ownBackend(t), "holder", ttl)
	d := backendtest.Open(t, ownBackend(t), "next", ttl)
	w := backendtest.Open(t, ownBackend(t), "waiter", queueTimeout)
	tok := backendtest.Acquire(t, h, "job")
	wantHeld(t, d, "job")
	wantHeld(t, w, "job")
	got := acquireOnceFree(t, w, "job", "the waiter takes the lock behind two expired sessions")
	if got <= tok {
		t.Fatalf("token %d after the expiries, want > %d", got, tok)
	}
}

// TestShortHoldSetsNoLossWatch: a lock released before the loss watch's
// settling pause is over costs its session no exists watch: the
// acquire, the release and the Close are the only requests.
func TestShortHoldSetsNoLossWatch(t *testing.T) {
	b := ownBackend(t)
	zookeeper.GrantSettle(b, time.Hour) // however slow the machine
	calls := zookeeper.CountCalls(b)
	s := backendtest.Open(t, b, "a", queueTimeout)
	tok := backendtest.Acquire(t, s, "job") // creates the lock's parent
	if err := s.Release(t.Context(), "job", tok, 0); err != nil {
		t.Fatal(err)
	}
	calls.Store(0)
	s.Losses() // starts the loss watch
	tok = backendtest.Acquire(t, s, "job")
	if err := s.Release(t.Context(), "job", tok, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(t.Context()); err != nil { // waits for the loss watch
		t.Fatal(err)
	}
	if n := calls.Load(); n != 3 {
		t.Fatalf("acquire, release and Close made %d requests, want 3", n)
	}
}

// TestTryAfterWatchIsAnswered: the try a waiter makes right after setting
// its watch (so as not to miss a release before it) is answered by the
// watch, which found the node ahead still there: no request. The try
// after that looks at the queue again.
func TestTryAfterWatchIsAnswered(t *testing.T) {
	wb := ownBackend(t)
	calls := zookeeper.CountCalls(wb)
	h := backendtest.Open(t, ownBackend(t), "holder", queueTimeout)
	w := backendtest.Open(t, wb, "waiter", queueTimeout)
	tok := backendtest.Acquire(t, h, "job")
	wantHeld(t, w, "job")
	ch, err := wb.Watch(t.Context(), "job")
	if err != nil {
		t.Fatal(err)
	}
	calls.Store(0)
	wantHeld(t, w, "job")
	if n := calls.Load(); n != 0 {
		t.Fatalf("the try right after the watch made %d requests, want 0", n)
	}
	wantHeld(t, w, "job")
	if n := calls.Load(); n != 1 {
		t.Fatalf("the next try made %d requests, want 1 (the listing)", n)
	}
	if err := h.Release(t.Context(), "job", tok, 0); err != nil {
		t.Fatal(err)
	}
	woken(t, ch, "the waiter after the release")
	backendtest.Acquire(t, w, "job")
}

// TestLockRecreatedIsJudgedAfresh: a lock's parent is a container, which
// the server deletes once its last child has gone; the parent made again
// numbers its children from 0, so a holder's node may have the name of a
// node a waiter judged before. The waiter judges the new node on what it
// reads, not on what it remembers of the old one: here the old node's
// lease is over, the new one's is not, and the waiter finds it held.
func TestLockRecreatedIsJudgedAfresh(t *testing.T) {
	const lease = 100 * time.Millisecond
	conn := dial(t, server(t).Addr(), queueTimeout)
	h := backendtest.Open(t, newBackend(t, conn, queueTimeout), "holder", queueTimeout)
	w := backendtest.Open(t, ownBackend(t), "waiter", queueTimeout)
	tok, err := h.Acquire(t.Context(), "job", lease)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Acquire(t.Context(), "job", lease); !errors.Is(err, backends.ErrHeld) {
		t.Fatalf("the waiter's Acquire: %v, want ErrHeld", err)
	}
	if err := h.Release(t.Context(), "job", tok, 0); err != nil {
		t.Fatal(err)
	}
	if err := conn.Delete(root(t)+"/locks/job", -1); err != nil { // as the server does to an empty container
		t.Fatal(err)
	}
	// Kept as a sleep: the waiter's memory of the first node's lease must
	// be out of date, so that lease must be over on any clock; nothing
	// happens on the server to wait on.
	time.Sleep(2 * lease)
	if _, err := h.Acquire(t.Context(), "job", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Acquire(t.Context(), "job", time.Minute); !errors.Is(err, backends.ErrHeld) {
		t.Fatalf("the waiter's Acquire of the lock held anew: %v, want ErrHeld", err)
	}
}
