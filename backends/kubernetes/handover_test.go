package kubernetes_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientset "k8s.io/client-go/kubernetes"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/backendtest"
	"github.com/hustings/hustings/backends/kubernetes"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/testserver"
)

// getLock reads the Lease of the lock name.
func getLock(t *testing.T, cs clientset.Interface, ns string, b *kubernetes.Backend, name string) *coordv1.Lease {
	t.Helper()
	l, err := cs.CoordinationV1().Leases(ns).Get(t.Context(), b.LockLease(name), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get the Lease of %q: %v", name, err)
	}
	return l
}

// release releases name on s with hold, failing the test on an error.
func release(t *testing.T, s backends.Session, name string, tok events.Token, hold time.Duration) {
	t.Helper()
	if err := s.Release(t.Context(), name, tok, hold); err != nil {
		t.Fatalf("%s: Release(%q, %d): %v", s.ID(), name, tok, err)
	}
}

// TestReleaseWritesWithoutReading: a Release is one update of the Lease
// as the session's take left it, with no read; a Lease changed since (a
// fenced write) or carrying more than the backend's own annotations is
// read first, and what else it carries is kept.
func TestReleaseWritesWithoutReading(t *testing.T) {
	var calls methodCount
	cs := client(t, &calls)
	ns := namespace(t, cs)
	b := newBackend(t, cs, ns)
	a, other := backendtest.Open(t, b, "a", 10*time.Second), backendtest.Open(t, b, "b", 10*time.Second)
	const name, fenced = "release/unread", "example.com/last-writer"
	steps := []struct {
		what    string
		fence   bool          // write a fenced annotation before the release
		hold    time.Duration // release with a hold
		reads   int64         // GETs the Release makes
		updates int64         // and updates
	}{
		{"plain", false, 0, 0, 1},
		{"with a hold", false, 3 * time.Second, 0, 1}, // long enough that b tries within it on a busy machine
		{"after a fenced write", true, 0, 1, 2},       // the first refused (409)
		{"of a Lease carrying an earlier term's fenced annotation", false, 0, 1, 1},
	}
	for _, st := range steps {
		tok := backendtest.Acquire(t, a, name)
		if st.fence {
			if err := fencedWrite(t.Context(), b, name, tok); err != nil {
				t.Fatalf("%s: Fence: %v", st.what, err)
			}
		}
		gets, puts := calls.get.Load(), calls.put.Load()
		release(t, a, name, tok, st.hold)
		if got := calls.get.Load() - gets; got != st.reads {
			t.Errorf("%s: Release made %d GETs, want %d", st.what, got, st.reads)
		}
		if got := calls.put.Load() - puts; got != st.updates {
			t.Errorf("%s: Release made %d updates, want %d", st.what, got, st.updates)
		}
		l := getLock(t, cs, ns, b, name)
		if s, ok := l.Labels["hustings.io/session"]; ok {
			t.Errorf("%s: the released Lease still names session %s", st.what, s)
		}
		if st.reads > 0 && l.Annotations[fenced] == "" {
			t.Errorf("%s: the fenced annotation is gone: %v", st.what, l.Annotations)
		}
		if st.hold > 0 {
			if got := *l.Spec.HolderIdentity; got != "a" || l.Annotations["hustings.io/hold-ms"] != "3000" {
				t.Errorf("%s: holder %q, annotations %v; want a, on hold for 3 s", st.what, got, l.Annotations)
			}
			if _, err := other.Acquire(t.Context(), name, 0); !errors.Is(err, backends.ErrHeld) {
				t.Fatalf("%s: b's Acquire during the hold: %v, want ErrHeld", st.what, err)
			}
			testserver.Eventually(t, "b acquires after the hold", 20*time.Second, func() bool {
				_, err := other.Acquire(t.Context(), name, 0)
				return err == nil
			})
			release(t, other, name, getToken(t, cs, ns, b, name), 0)
			continue
		}
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != "" {
			t.Errorf("%s: the released Lease has holder %v, want none", st.what, l.Spec.HolderIdentity)
		}
		release(t, other, name, backendtest.Acquire(t, other, name), 0)
	}
}

// getToken returns the token the Lease of the lock name records.
func getToken(t *testing.T, cs clientset.Interface, ns string, b *kubernetes.Backend, name string) events.Token {
	t.Helper()
	var tok events.Token
	if _, err := fmt.Sscan(getLock(t, cs, ns, b, name).Annotations["hustings.io/token"], &tok); err != nil {
		t.Fatalf("token of %q: %v", name, err)
	}
	return tok
}

// TestAcquireFromTheWatch: a waiter woken by a release takes the lock
// with one update and no read, from the Lease its watch delivered.
func TestAcquireFromTheWatch(t *testing.T) {
	const name = "handover/watched"
	calls, waiterB, holder, waiter, tok, ch := heldAndWatched(t, name)
	if _, err := waiter.Acquire(t.Context(), name, 0); !errors.Is(err, backends.ErrHeld) {
		t.Fatalf("waiter's Acquire of a held lock: %v, want ErrHeld", err)
	}
	drain(ch)
	release(t, holder, name, tok, 0)
	signalled(t, ch, "the release")
	testserver.Eventually(t, "the watch delivers the release", 20*time.Second, func() bool {
		l := kubernetes.Watched(waiterB, name)
		return l != nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == ""
	})
	gets, puts := calls.get.Load(), calls.put.Load()
	backendtest.Acquire(t, waiter, name)
	if got := calls.get.Load() - gets; got != 0 {
		t.Errorf("the woken Acquire made %d GETs, want none", got)
	}
	if got := calls.put.Load() - puts; got != 1 {
		t.Errorf("the woken Acquire made %d updates, want 1", got)
	}
}

// TestHeldFromTheWatch: a waiter whose watch has seen the lock's Lease
// and its holder's session finds the lock held without a request, so
// that the retries of a waiting campaign cost the apiserver nothing and
// never hold up the Acquire a release wakes; once the watch delivers the
// release, the waiter takes the lock.
func TestHeldFromTheWatch(t *testing.T) {
	const name = "handover/held"
	calls, _, holder, waiter, tok, ch := heldAndWatched(t, name)
	before := calls.calls()
	for range 3 {
		if _, err := waiter.Acquire(t.Context(), name, 0); !errors.Is(err, backends.ErrHeld) {
			t.Fatalf("waiter's Acquire of a held lock: %v, want ErrHeld", err)
		}
	}
	if got := calls.calls() - before; got != 0 {
		t.Errorf("three Acquires of a lock held by a session the watch saw made %d requests, want none", got)
	}
	drain(ch)
	release(t, holder, name, tok, 0)
	signalled(t, ch, "the release")
	testserver.Eventually(t, "the waiter takes the released lock", 20*time.Second, func() bool {
		_, err := waiter.Acquire(t.Context(), name, 0)
		return err == nil
	})
}

// heldAndWatched sets up a handover of the lock name: holder holds it
// (token tok) on a Backend of its own; waiter's Backend, on a client
// whose requests calls counts, watches it (ch).
func heldAndWatched(t *testing.T, name string) (calls *methodCount, waiterB *kubernetes.Backend, holder, waiter backends.Session, tok events.Token, ch <-chan struct{}) {
	t.Helper()
	calls = &methodCount{}
	cs := client(t, nil)
	ns := namespace(t, cs)
	holderB := newBackend(t, cs, ns)
	waiterB = prefixed(t, client(t, calls), ns, kubernetes.Prefix(holderB))
	holder, waiter = backendtest.Open(t, holderB, "holder", 10*time.Second), backendtest.Open(t, waiterB, "waiter", 10*time.Second)
	tok = backendtest.Acquire(t, holder, name)
	return calls, waiterB, holder, waiter, tok, watchLock(t, waiterB, name)
}

// TestStaleWatchNeverGrants: an Acquire that finds the lock in a Lease
// its watch delivered long ago never takes it from its holder: a freed
// Lease since taken costs a conflict and a read, and a Lease that names
// the session itself (from before its release) is read again, not
// trusted.
func TestStaleWatchNeverGrants(t *testing.T) {
	cs := client(t, nil)
	ns := namespace(t, cs)
	holderB := newBackend(t, cs, ns)
	waiterB := prefixed(t, cs, ns, kubernetes.Prefix(holderB))
	holder, waiter := backendtest.Open(t, holderB, "holder", 10*time.Second), backendtest.Open(t, waiterB, "waiter", 10*time.Second)
	tests := []struct {
		name  string
		stale func(t *testing.T, name string) *coordv1.Lease // leaves the lock held by holder
	}{
		{"a freed Lease", func(t *testing.T, name string) *coordv1.Lease {
			release(t, holder, name, backendtest.Acquire(t, holder, name), 0)
			freed := getLock(t, cs, ns, holderB, name)
			backendtest.Acquire(t, holder, name)
			return freed
		}},
		{"the waiter's own Lease", func(t *testing.T, name string) *coordv1.Lease {
			tok := backendtest.Acquire(t, waiter, name)
			own := getLock(t, cs, ns, waiterB, name)
			release(t, waiter, name, tok, 0)
			backendtest.Acquire(t, holder, name)
			return own
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := "stale/" + tt.name
			stale := tt.stale(t, name)
			current := getLock(t, cs, ns, holderB, name)
			watchLock(t, waiterB, name)
			testserver.Eventually(t, "the watch delivers the take", 20*time.Second, func() bool {
				l := kubernetes.Watched(waiterB, name)
				return l != nil && l.ResourceVersion == current.ResourceVersion
			})
			kubernetes.SetWatched(waiterB, name, stale)
			if tok, err := waiter.Acquire(t.Context(), name, 0); !errors.Is(err, backends.ErrHeld) {
				t.Fatalf("Acquire from a stale Lease = %d, %v; want ErrHeld", tok, err)
			}
			if h, err := holderB.Holder(t.Context(), name); err != nil || h.ID != "holder" {
				t.Fatalf("Holder = %+v, %v; want holder", h, err)
			}
		})
	}
}
