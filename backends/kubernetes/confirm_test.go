package kubernetes_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientset "k8s.io/client-go/kubernetes"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/backendtest"
	"github.com/hustings/hustings/backends/kubernetes"
)

// TestKeepAliveByWatchSeesWhatCameBefore: once the Backend's watch
// confirms a session's locks, a KeepAlive that returns has heard of
// every change made before its renewal: a lock deleted by hand, and one
// rewritten by hand to another holder, just before it, are Lost when it
// returns, though it sent no LIST: with the watch running behind, it
// waits for it. Locks nobody touched stay held.
func TestKeepAliveByWatchSeesWhatCameBefore(t *testing.T) {
	h := newHolder(t, time.Minute, true)
	calls, cs, ns, b, s := h.calls, h.cs, h.ns, h.b, h.s
	deleted := backendtest.Acquire(t, s, "deleted")
	rewritten := backendtest.Acquire(t, s, "rewritten")
	kept := backendtest.Acquire(t, s, "kept")
	if err := s.KeepAlive(t.Context()); err != nil { // the LIST that the watch takes over from
		t.Fatalf("first KeepAlive: %v", err)
	}
	lists := calls.list.Load()
	for round := range 3 {
		if err := s.KeepAlive(t.Context()); err != nil {
			t.Fatalf("KeepAlive %d: %v", round, err)
		}
	}
	if lost := s.Lost(); lost != nil {
		t.Fatalf("Lost() = %v before anything was touched, want nil", lost)
	}

	// The watch runs behind from here on: the KeepAlive must wait for it
	// to deliver the changes, not return on its renewal alone.
	release := kubernetes.HoldDeliveries(b)
	defer release()
	deleteLock(t, cs, ns, b, "deleted")
	leases := cs.CoordinationV1().Leases(ns)
	l, err := leases.Get(t.Context(), b.LockLease("rewritten"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Labels["hustings.io/session"] != kubernetes.SessionLease(s) {
		t.Fatalf("lock Lease labelled %v, want its session %s", l.Labels, kubernetes.SessionLease(s))
	}
	l.Labels["hustings.io/session"] = kubernetes.SessionLease(s) + "-other" // another session's term
	if _, err := leases.Update(t.Context(), l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.KeepAlive(t.Context()) }()
	select {
	case err := <-done:
		t.Fatalf("KeepAlive returned (%v, Lost() = %v) while the watch had delivered nothing since the changes", err, s.Lost())
	case <-time.After(300 * time.Millisecond): // waiting, as it should; not a bound on anything
	}
	release()
	if err := <-done; err != nil {
		t.Fatalf("KeepAlive after the changes: %v", err)
	}
	lost := s.Lost()
	if lost["deleted"] != deleted || lost["rewritten"] != rewritten || len(lost) != 2 {
		t.Fatalf("Lost() = %v when the KeepAlive after the changes returned; want deleted %d and rewritten %d", lost, deleted, rewritten)
	}
	if n := calls.list.Load() - lists; n != 0 {
		t.Errorf("KeepAlives confirmed by the watch sent %d LISTs, want none", n)
	}
	if err := s.Release(t.Context(), "kept", kept, 0); err != nil {
		t.Fatalf("Release of the lock nobody touched: %v", err)
	}
}

// TestKeepAliveWithoutWatchLists: a session whose losses nobody asked
// for (no Losses) confirms its locks with a LIST at every KeepAlive, and
// finds a lock deleted by hand.
func TestKeepAliveWithoutWatchLists(t *testing.T) {
	h := newHolder(t, time.Minute, false)
	calls, s := h.calls, h.s
	tok := backendtest.Acquire(t, s, "job")
	lists := calls.list.Load()
	const ticks = 3
	for round := range ticks {
		if err := s.KeepAlive(t.Context()); err != nil {
			t.Fatalf("KeepAlive %d: %v", round, err)
		}
	}
	if n := calls.list.Load() - lists; n != ticks {
		t.Errorf("%d KeepAlives without a watch sent %d LISTs, want %d", ticks, n, ticks)
	}
	deleteLock(t, h.cs, h.ns, h.b, "job")
	if err := s.KeepAlive(t.Context()); err != nil {
		t.Fatalf("KeepAlive: %v", err)
	}
	if lost := s.Lost(); lost["job"] != tok {
		t.Fatalf("Lost() = %v, want job %d", lost, tok)
	}
}

// TestKeepAliveListsWhenTheWatchLags: a KeepAlive whose renewal the
// watch has not delivered within a quarter of the TTL confirms the
// locks with a LIST instead, and finds a lock deleted by hand. (A TTL of
// 8 s: a 2 s wait, and room for a busy machine between two KeepAlives.)
func TestKeepAliveListsWhenTheWatchLags(t *testing.T) {
	h := newHolder(t, 8*time.Second, true)
	calls, cs, ns, b, s := h.calls, h.cs, h.ns, h.b, h.s
	tok := backendtest.Acquire(t, s, "job")
	if err := s.KeepAlive(t.Context()); err != nil { // the LIST that the watch takes over from
		t.Fatalf("first KeepAlive: %v", err)
	}
	release := kubernetes.HoldDeliveries(b) // for longer than the KeepAlive waits
	defer release()
	deleteLock(t, cs, ns, b, "job")
	lists := calls.list.Load()
	if err := s.KeepAlive(t.Context()); err != nil {
		t.Fatalf("KeepAlive with the watch held: %v", err)
	}
	if n := calls.list.Load() - lists; n != 1 {
		t.Errorf("KeepAlive with the watch held sent %d LISTs, want 1", n)
	}
	if lost := s.Lost(); lost["job"] != tok {
		t.Fatalf("Lost() = %v, want job %d", lost, tok)
	}
}

// holder is a session of its own Backend and namespace, on a client whose
// requests are counted.
type holder struct {
	calls *methodCount
	cs    clientset.Interface
	ns    string
	b     *kubernetes.Backend
	s     backends.Session
}

// newHolder opens a session with ttl, whose losses the Backend's watch
// pushes if listen (it called Losses).
func newHolder(t *testing.T, ttl time.Duration, listen bool) holder {
	h := holder{calls: &methodCount{}}
	h.cs = client(t, h.calls)
	h.ns = namespace(t, h.cs)
	h.b = newBackend(t, h.cs, h.ns)
	h.s = backendtest.Open(t, h.b, "holder", ttl)
	if listen {
		h.s.Losses()
	}
	return h
}
