package zookeeper_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hustings/hustings/backends"
)

// TestKeepAliveCostsOneRequest: a session renews itself and confirms
// every lock it holds with one request per KeepAlive, with 0, 1 or 1,000
// locks, counted by the server (mntr's zk_packets_received): no per-lock
// traffic. Beyond 1,000 locks the checks take one more request per 1,000.
func TestKeepAliveCostsOneRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("takes 1,001 locks")
	}
	const renewals = 50
	const timeout = 4 * time.Second
	srv := server(t)
	b := newBackend(t, dial(t, srv.Addr(), timeout), timeout)
	s, err := b.Open(t.Context(), "many", timeout)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(t.Context())
	held := 0
	for _, c := range []struct{ locks, requests int }{{0, 1}, {1, 1}, {1000, 1}, {1001, 2}} {
		acquireAll(t, s, held, c.locks)
		held = c.locks
		if err := s.KeepAlive(t.Context()); err != nil {
			t.Fatal(err)
		}
		before := packets(t, srv)
		for range renewals {
			if err := s.KeepAlive(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		after := packets(t, srv)
		if lost := s.Lost(); lost != nil {
			t.Fatalf("Lost() = %v, want nil", lost)
		}
		// The second mntr counts itself; the conn's pings (one every 1.3 s)
		// and anything else on the server add a few more, never 1,000.
		got, want := after-before, int64(renewals*c.requests)
		t.Logf("%d keep-alives of a session with %d locks: %d packets received by the server", renewals, c.locks, got)
		if got < want || got > want+10 {
			t.Fatalf("%d keep-alives with %d locks cost %d requests, want %d (+ a few pings)", renewals, c.locks, got, want)
		}
	}
}

// acquireAll takes locks lock-<from> … lock-<to-1> through s, 16 at a
// time (calls for different names go on in parallel), renewing s
// meanwhile: on a busy machine a thousand acquires can take longer than
// its TTL.
func acquireAll(t *testing.T, s backends.Session, from, to int) {
	t.Helper()
	names := make(chan string)
	errs := make(chan error, to-from+1)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if err := s.KeepAlive(t.Context()); err != nil {
					errs <- fmt.Errorf("KeepAlive while acquiring: %w", err)
					return
				}
			}
		}
	}()
	for range 16 {
		wg.Go(func() {
			for name := range names {
				if _, err := s.Acquire(t.Context(), name, 0); err != nil {
					errs <- fmt.Errorf("Acquire(%q): %w", name, err)
				}
			}
		})
	}
	for i := from; i < to; i++ {
		names <- fmt.Sprintf("lock-%d", i)
	}
	close(names)
	wg.Wait()
	close(stop)
	<-renewed
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// packets returns how many packets the server has received.
func packets(t *testing.T, srv interface {
	Mntr() (map[string]int64, error)
}) int64 {
	t.Helper()
	m, err := srv.Mntr()
	if err != nil {
		t.Fatal(err)
	}
	n, ok := m["zk_packets_received"]
	if !ok {
		t.Fatal("mntr has no zk_packets_received")
	}
	return n
}
