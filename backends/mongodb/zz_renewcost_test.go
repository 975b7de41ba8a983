package mongodb_test

import (
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/hustings/hustings/backends/mongodb/mongotest"
)

// Throwaway: how long a KeepAlive takes with n locks held, on FerretDB.
func TestZZRenewCost(t *testing.T) {
	if os.Getenv("ZZ") == "" {
		t.Skip("throwaway")
	}
	srv := mongotest.Start(t)
	b := newBackend(t, srv.URI())
	s, err := b.Open(t.Context(), "a", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	held := 0
	for _, n := range []int{0, 100, 1000, 3000, 10000} {
		sem := make(chan struct{}, 4)
		var wg sync.WaitGroup
		start := time.Now()
		for i := held; i < n; i++ {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				if _, err := s.Acquire(t.Context(), fmt.Sprintf("l%d", i), 0); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		took := time.Since(start)
		held = n
		for range 3 {
			k := time.Now()
			if err := s.KeepAlive(t.Context()); err != nil {
				t.Fatal(err)
			}
			t.Logf("%5d locks (acquired in %v): KeepAlive %v", n, took.Round(time.Millisecond), time.Since(k).Round(time.Millisecond))
		}
	}
}
