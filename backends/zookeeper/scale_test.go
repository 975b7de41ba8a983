package zookeeper_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hustings/hustings/backends"
)

// TestKeepAliveCostsOneRequest: a session holding 1,000 locks renews them
// all with one request per KeepAlive, counted by the server (mntr's
// zk_packets_received): no per-lock traffic.
func TestKeepAliveCostsOneRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("takes 1,000 locks")
	}
	const locks, renewals = 1000, 50
	const timeout = 4 * time.Second
	srv := server(t)
	b := newBackend(t, dial(t, srv.Addr(), timeout), timeout)
	s, err := b.Open(t.Context(), "many", timeout)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(t.Context())
	acquireAll(t, s, locks)
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
	// The second mntr counts itself; the conn's pings (one every 1.3 s)
	// and anything else on the server add a few more, never 1,000.
	got := after - before
	t.Logf("%d keep-alives of a session with %d locks: %d packets received by the server", renewals, locks, got)
	if got < renewals || got > renewals+10 {
		t.Fatalf("%d keep-alives cost %d requests, want %d (+ a few pings)", renewals, got, renewals)
	}
}

// acquireAll takes locks lock-0 … lock-<n-1> through s, 16 at a time
// (calls for different names go on in parallel), renewing s meanwhile: on
// a busy machine the thousand acquires can take longer than its TTL.
func acquireAll(t *testing.T, s backends.Session, n int) {
	t.Helper()
	names := make(chan string)
	errs := make(chan error, n+1)
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
	for i := range n {
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
