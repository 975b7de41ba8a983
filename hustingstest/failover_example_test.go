package hustingstest_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/hustingstest"
)

// store is the resource a user's reconcile loop writes to: it remembers
// who wrote under which token, and when.
type store struct {
	mu     sync.Mutex
	writes []write
}

type write struct {
	who   string
	token events.Token
	at    time.Time
}

func (s *store) put(who string, token events.Token) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes = append(s.writes, write{who, token, time.Now()})
}

// reconcile is the code under test: it writes every 100ms while its term
// lasts, and must stop when the term's context ends.
func reconcile(ctx context.Context, s *store, who string, term events.Event) error {
	for {
		s.put(who, term.Token)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// TestReconcileStopsAtFailover is the test a user writes for a loop that
// must stop writing when its term ends: two replicas on the in-memory
// backend, the leader's host crashes (its calls hang, as a frozen host's
// do), and the other takes over once the lease ran out. In a synctest
// bubble the 2 s TTL passes in virtual time: the test takes milliseconds.
func TestReconcileStopsAtFailover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		hosts := map[string]*hustingstest.Crashable{
			"a": hustingstest.NewCrashable(b),
			"b": hustingstest.NewCrashable(b),
		}
		var s store
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		terms := make(chan events.Event, 4)
		for _, id := range []string{"a", "b"} {
			c, err := campaign.New(hosts[id], "reconcile", campaign.WithID(id),
				campaign.WithTTL(2*time.Second), campaign.WithRetry(250*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			wg.Go(func() {
				_ = campaign.WhileLeader(ctx, c, func(ctx context.Context, term events.Event) error {
					terms <- term
					return reconcile(ctx, &s, id, term)
				})
			})
			if id == "a" {
				<-terms // a leads before b starts
			}
		}

		time.Sleep(time.Second)
		hosts["a"].Crash()
		crashed := time.Now()
		next := <-terms // b, once a's lease ran out
		time.Sleep(time.Second)
		hosts["a"].Refuse() // let the crashed replica's Close fail at once
		cancel()
		wg.Wait()

		if next.Holder != "b" {
			t.Fatalf("after the crash %s was elected, want b", next.Holder)
		}
		var lastA time.Time
		for _, w := range s.writes {
			if w.who == "a" {
				lastA = w.at
			}
		}
		if deadline := crashed.Add(2 * time.Second); lastA.After(deadline) {
			t.Errorf("a wrote %v after its crash, past its term's deadline (TTL 2s)", lastA.Sub(crashed))
		}
		for _, w := range s.writes {
			if w.who == "b" && !w.at.After(lastA) {
				t.Errorf("b wrote %v after the crash, before a's last write (%v): two writers at once",
					w.at.Sub(crashed), lastA.Sub(crashed))
			}
			if w.who == "b" && w.token != next.Token {
				t.Errorf("b wrote under token %d, not its term's %d", w.token, next.Token)
			}
		}
	})
}
