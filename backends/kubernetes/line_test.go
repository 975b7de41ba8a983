package kubernetes_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/backendtest"
	"github.com/hustings/hustings/backends/kubernetes"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/testserver"
)

// wait makes s a waiter for name, as the engine's waiting campaigns and
// runs are: an Acquire that finds it held, a WatchInLine of it (until
// the test ends), and an Acquire again; it returns the watch.
func wait(t *testing.T, s backends.Session, name string) <-chan struct{} {
	t.Helper()
	if _, err := s.Acquire(t.Context(), name, 0); !errors.Is(err, backends.ErrHeld) {
		t.Fatalf("%s: Acquire(%q) of a held lock: %v, want ErrHeld", s.ID(), name, err)
	}
	ch, err := s.(backends.LineWatcher).WatchInLine(t.Context(), name)
	if err != nil {
		t.Fatalf("%s: WatchInLine(%q): %v", s.ID(), name, err)
	}
	if _, err := s.Acquire(t.Context(), name, 0); !errors.Is(err, backends.ErrHeld) {
		t.Fatalf("%s: Acquire(%q) of a held lock, watching it: %v, want ErrHeld", s.ID(), name, err)
	}
	return ch
}

// TestHandoverIsOneUpdate: a waiter that watches the lock joins its line
// (one update, when it starts waiting); the holder's Release names it the
// holder in its one update, and the waiter, woken by its watch, takes
// the lock with no request at all, under the token of the version the
// release was conditioned on.
func TestHandoverIsOneUpdate(t *testing.T) {
	const name = "line/handover"
	var hc, wc methodCount
	cs := client(t, &hc)
	ns := namespace(t, cs)
	holderB := newBackend(t, cs, ns)
	waiterB := prefixed(t, client(t, &wc), ns, kubernetes.Prefix(holderB))
	holder := backendtest.Open(t, holderB, "holder", 10*time.Second)
	waiter := backendtest.Open(t, waiterB, "waiter", 10*time.Second)
	holder.Losses() // a campaign listens: its Backend's watch runs
	tok := backendtest.Acquire(t, holder, name)

	puts := wc.put.Load()
	ch := wait(t, waiter, name)
	if got := wc.put.Load() - puts; got != 1 {
		t.Errorf("joining the line took %d updates, want 1", got)
	}
	before := wc.calls()
	if _, err := waiter.Acquire(t.Context(), name, 0); !errors.Is(err, backends.ErrHeld) {
		t.Fatalf("Acquire in line: %v, want ErrHeld", err)
	}
	if got := wc.calls() - before; got != 0 {
		t.Errorf("an Acquire of a session already in line made %d requests, want none", got)
	}
	joined := getLock(t, cs, ns, holderB, name).ResourceVersion
	testserver.Eventually(t, "the holder's watch delivers the join", 20*time.Second, func() bool {
		return kubernetes.LineSeen(holderB, name) == joined
	})

	drain(ch)
	hgets, hputs, wcalls := hc.get.Load(), hc.put.Load(), wc.calls()
	release(t, holder, name, tok, 0)
	if g, p := hc.get.Load()-hgets, hc.put.Load()-hputs; g != 0 || p != 1 {
		t.Errorf("the handing-over Release made %d GETs and %d updates, want 0 and 1", g, p)
	}
	signalled(t, ch, "the release")
	testserver.Eventually(t, "the watch delivers the handover", 20*time.Second, func() bool {
		l := kubernetes.Watched(waiterB, name)
		return l != nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == "waiter"
	})
	got := backendtest.Acquire(t, waiter, name)
	if n := wc.calls() - wcalls; n != 0 {
		t.Errorf("the named waiter's Acquire made %d requests, want none", n)
	}
	if want := mustToken(t, joined); got != want {
		t.Errorf("the waiter's token = %d, want %d (the version the release was conditioned on)", got, want)
	}
	if got <= tok {
		t.Errorf("the waiter's token %d is not above the holder's %d", got, tok)
	}
	wantHolder(t, holderB, name, "waiter", got)
	release(t, waiter, name, got, 0)
	wantHolder(t, holderB, name, "", 0)
}

// TestTryingCostsNoWrite: an Acquire that finds the lock held writes
// nothing unless the session waits for it (WatchInLine): a run that
// skips on contention, tried again and again, even while an observer
// watches the lock, never puts a session in line.
func TestTryingCostsNoWrite(t *testing.T) {
	const name = "line/try"
	var calls methodCount
	cs := client(t, &calls)
	ns := namespace(t, cs)
	b := newBackend(t, cs, ns)
	holder := backendtest.Open(t, b, "holder", 10*time.Second)
	tok := backendtest.Acquire(t, holder, name)
	tryer := backendtest.Open(t, b, "tryer", 10*time.Second)
	writes := calls.writes()
	try := func() {
		t.Helper()
		if _, err := tryer.Acquire(t.Context(), name, 0); !errors.Is(err, backends.ErrHeld) {
			t.Fatalf("Acquire of a held lock: %v, want ErrHeld", err)
		}
	}
	try()
	watchLock(t, b, name) // an observer's
	try()
	try()
	if got := calls.writes() - writes; got != 0 {
		t.Errorf("three tries of a held lock made %d writes, want none", got)
	}
	release(t, holder, name, tok, 0)
	wantHolder(t, b, name, "", 0)
}

// elsewhere opens a session of candidate id on a Backend and a client of
// its own, in b's namespace and prefix: a candidate in another process.
func elsewhere(t *testing.T, ns string, b *kubernetes.Backend, id string) backends.Session {
	t.Helper()
	return backendtest.Open(t, prefixed(t, client(t, nil), ns, kubernetes.Prefix(b)), id, 10*time.Second)
}

// TestDeadWaiterSkipped: a release names the oldest waiter whose session
// it judges live, and drops those it judges dead in the same update: a
// waiter whose session Lease is gone is skipped.
func TestDeadWaiterSkipped(t *testing.T) {
	const name = "line/dead"
	cs := client(t, nil)
	ns := namespace(t, cs)
	holderB := newBackend(t, cs, ns)
	holder := backendtest.Open(t, holderB, "holder", 10*time.Second)
	dead, live := elsewhere(t, ns, holderB, "dead"), elsewhere(t, ns, holderB, "live")
	tok := backendtest.Acquire(t, holder, name)
	wait(t, dead, name)
	ch := wait(t, live, name)
	// The dead waiter's process is gone: its session Lease deleted behind
	// its back, as an observer deletes one it judged expired.
	if err := cs.CoordinationV1().Leases(ns).Delete(t.Context(), kubernetes.SessionLease(dead), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	drain(ch)
	release(t, holder, name, tok, 0)
	signalled(t, ch, "the release")
	got := backendtest.Acquire(t, live, name)
	wantHolder(t, holderB, name, "live", got)
	if l := getLock(t, cs, ns, holderB, name); l.Annotations["hustings.io/waiters"] != "" {
		t.Errorf("the waiters left after the handover: %q, want none", l.Annotations["hustings.io/waiters"])
	}
}

// TestDequeueReleasesNamedUntold: a waiter named the holder whose
// campaign stopped waiting gives the lock on with Dequeue, to the next
// waiter in line.
func TestDequeueReleasesNamedUntold(t *testing.T) {
	const name = "line/untold"
	cs := client(t, nil)
	ns := namespace(t, cs)
	holderB := newBackend(t, cs, ns)
	holder := backendtest.Open(t, holderB, "holder", 10*time.Second)
	first, next := elsewhere(t, ns, holderB, "first"), elsewhere(t, ns, holderB, "next")
	tok := backendtest.Acquire(t, holder, name)
	wait(t, first, name)
	ch := wait(t, next, name)
	release(t, holder, name, tok, 0)
	wantHolder(t, holderB, name, "first", 0)
	drain(ch)
	if err := first.(backends.Dequeuer).Dequeue(t.Context(), name); err != nil {
		t.Fatalf("Dequeue: %v", err)
	}
	signalled(t, ch, "the Dequeue")
	got := backendtest.Acquire(t, next, name)
	wantHolder(t, holderB, name, "next", got)
}

// wantHolder fails the test unless b reports id holding name, under tok
// unless it is 0.
func wantHolder(t *testing.T, b backends.Backend, name, id string, tok events.Token) {
	t.Helper()
	h, err := b.Holder(t.Context(), name)
	if err != nil || h.ID != id || tok != 0 && h.Token != tok {
		t.Fatalf("Holder(%q) = %+v, %v; want %q under token %d", name, h, err, id, tok)
	}
}

// mustToken parses a resourceVersion as a token.
func mustToken(t *testing.T, rv string) events.Token {
	t.Helper()
	var tok events.Token
	if _, err := fmt.Sscan(rv, &tok); err != nil {
		t.Fatalf("resourceVersion %q: %v", rv, err)
	}
	return tok
}

// TestJoiningEndsNoTerm: a waiter joining the line changes the lock's
// Lease without ending its holder's term: the holder's watch pushes no
// loss, its KeepAlive confirms the lock, Fence admits the holder's token
// (a join between its read and its write costs a retry, not a refusal),
// and a fenced annotation outlives the handover, which then refuses the
// old token.
func TestJoiningEndsNoTerm(t *testing.T) {
	const name = "line/term"
	cs := client(t, nil)
	ns := namespace(t, cs)
	holderB := newBackend(t, cs, ns)
	holder := backendtest.Open(t, holderB, "holder", 10*time.Second)
	losses := holder.Losses()
	tok := backendtest.Acquire(t, holder, name)
	if err := fencedWrite(t.Context(), holderB, name, tok); err != nil {
		t.Fatalf("Fence before the line: %v", err)
	}
	var waiters []backends.Session
	for _, id := range []string{"w1", "w2", "w3"} {
		w := elsewhere(t, ns, holderB, id)
		wait(t, w, name)
		waiters = append(waiters, w)
		if err := fencedWrite(t.Context(), holderB, name, tok); err != nil {
			t.Fatalf("Fence after %s joined: %v", id, err)
		}
	}
	if err := holder.KeepAlive(t.Context()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-losses:
		t.Fatalf("the holder's watch pushed a loss on a join: Lost() = %v", holder.Lost())
	default:
	}
	if lost := holder.Lost(); len(lost) != 0 {
		t.Fatalf("Lost() = %v after waiters joined, want none", lost)
	}
	release(t, holder, name, tok, 0)
	l := getLock(t, cs, ns, holderB, name)
	if l.Annotations["example.com/last-writer"] == "" {
		t.Errorf("the fenced annotation is gone after the handover: %v", l.Annotations)
	}
	next := mustToken(t, l.Annotations["hustings.io/token"])
	wantHolder(t, holderB, name, "w1", next)
	if err := fencedWrite(t.Context(), holderB, name, tok); !errors.Is(err, backends.ErrNotHeld) {
		t.Fatalf("Fence under the released token: %v, want ErrNotHeld", err)
	}
	if err := fencedWrite(t.Context(), holderB, name, next); err != nil {
		t.Fatalf("Fence under the named waiter's token: %v", err)
	}
	if got := backendtest.Acquire(t, waiters[0], name); got != next {
		t.Fatalf("w1's Acquire = %d, want %d", got, next)
	}
}

// TestHoldNamesNoOne: a release with a hold keeps the lock held by
// nobody alive for the hold, as without a line; then the waiter takes it
// with an update of its own.
func TestHoldNamesNoOne(t *testing.T) {
	const name = "line/hold"
	cs := client(t, nil)
	ns := namespace(t, cs)
	b := newBackend(t, cs, ns)
	holder := backendtest.Open(t, b, "holder", 10*time.Second)
	waiter := backendtest.Open(t, b, "waiter", 10*time.Second)
	tok := backendtest.Acquire(t, holder, name)
	wait(t, waiter, name)
	release(t, holder, name, tok, 500*time.Millisecond)
	wantHolder(t, b, name, "holder", tok)
	testserver.Eventually(t, "the waiter takes the lock after the hold", 20*time.Second, func() bool {
		_, err := waiter.Acquire(t.Context(), name, 0)
		return err == nil
	})
	if l := getLock(t, cs, ns, b, name); l.Annotations["hustings.io/waiters"] != "" {
		t.Errorf("the taker is still in line: %q", l.Annotations["hustings.io/waiters"])
	}
}

// TestCloseLeavesLine: a waiter's Close takes it out of the lines it is
// in, so that no release names a closed session.
func TestCloseLeavesLine(t *testing.T) {
	const name = "line/close"
	cs := client(t, nil)
	ns := namespace(t, cs)
	b := newBackend(t, cs, ns)
	holder := backendtest.Open(t, b, "holder", 10*time.Second)
	waiter := backendtest.Open(t, b, "waiter", 10*time.Second)
	tok := backendtest.Acquire(t, holder, name)
	wait(t, waiter, name)
	if err := waiter.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if l := getLock(t, cs, ns, b, name); l.Annotations["hustings.io/waiters"] != "" {
		t.Errorf("the closed waiter is still in line: %q", l.Annotations["hustings.io/waiters"])
	}
	release(t, holder, name, tok, 0)
	wantHolder(t, b, name, "", 0)
}
