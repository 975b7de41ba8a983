package kubernetes_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kwatch "k8s.io/apimachinery/pkg/watch"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/backendtest"
	"github.com/hustings/hustings/backends/kubernetes"
)

// TestKeepAliveIsOneWrite: a session holding 1,000 locks costs the
// apiserver one write per KeepAlive (the session Lease's renewal),
// counted both as requests the client sent and as writes the server
// applied in the namespace (events of a watch on its Leases), and one
// read, the LIST that confirms the locks, only at the first: after it
// the Backend's watch confirms them. Every lock stays confirmed.
func TestKeepAliveIsOneWrite(t *testing.T) {
	const locks, ticks = 1000, 5
	var calls methodCount
	cs := client(t, &calls)
	ns := namespace(t, cs)
	b := newBackend(t, cs, ns)
	s := backendtest.Open(t, b, "holder", time.Minute)
	losses := s.Losses() // the watch sees every take: none is a loss
	var wg sync.WaitGroup
	errs := make(chan error, locks)
	sem := make(chan struct{}, 16)
	for i := range locks {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if _, err := s.Acquire(t.Context(), fmt.Sprintf("lock-%04d", i), 0); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Acquire: %v", err)
	}

	leases := cs.CoordinationV1().Leases(ns)
	list, err := leases.List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := leases.Watch(t.Context(), metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	writes, lists := calls.writes(), calls.list.Load()
	for range ticks {
		if err := s.KeepAlive(t.Context()); err != nil {
			t.Fatalf("KeepAlive: %v", err)
		}
	}
	if got := calls.writes() - writes; got != ticks {
		t.Errorf("%d KeepAlives holding %d locks sent %d writes, want %d", ticks, locks, got, ticks)
	}
	if got := calls.list.Load() - lists; got != 1 {
		t.Errorf("%d KeepAlives sent %d LISTs, want 1, the first's", ticks, got)
	}
	if lost := s.Lost(); lost != nil {
		t.Fatalf("Lost() = %d locks after the ticks, want none", len(lost))
	}

	// A marker lock taken after the ticks: every write before it is seen
	// first, by this test's watch and by the Backend's, whose losses are
	// then all signalled.
	seen := watchLock(t, b, "marker")
	if _, err := s.Acquire(t.Context(), "marker", 0); err != nil {
		t.Fatal(err)
	}
	marker := b.LockLease("marker")
	applied := map[string]int{}
	for ev := range w.ResultChan() {
		l, ok := ev.Object.(*coordv1.Lease)
		if !ok || ev.Type == kwatch.Error {
			t.Fatalf("watch event %s: %v", ev.Type, ev.Object)
		}
		if l.Name == marker {
			break
		}
		applied[l.Name]++
	}
	if len(applied) != 1 || applied[kubernetes.SessionLease(s)] != ticks {
		t.Fatalf("the server applied writes %v during %d ticks, want %d to the session Lease only", applied, ticks, ticks)
	}
	signalled(t, seen, "the marker's take")
	select {
	case <-losses:
		t.Fatalf("Losses signalled; Lost() = %d locks", len(s.Lost()))
	default:
	}
}

// TestStorm starts 2,000 campaigns on one shared session at once (see
// backendtest.RunStorm): each first Acquire costs a GET, a create and an
// update, so the storm is 6,000 requests through the apiserver's
// fairness queues, which the session's keep-alives must not starve
// behind.
func TestStorm(t *testing.T) {
	cs := client(t, nil)
	ns := namespace(t, cs)
	backendtest.RunStorm(t, backendtest.Harness{
		New: func(t *testing.T) backends.Backend { return newBackend(t, cs, ns) },
		TTL: time.Second,
	}, 2_000)
}
