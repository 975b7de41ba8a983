package hustingstest_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/hustingstest"
)

// reconcile is the code under test: it writes every 100ms while its term
// lasts, and must stop when the term's context ends. write is where the
// write lands.
func reconcile(ctx context.Context, term events.Event, write func(events.Token)) error {
	for ctx.Err() == nil {
		write(term.Token)
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

// failover runs loop under campaign.WhileLeader on two replicas sharing
// the in-memory backend, crashes the leader's host (its calls hang, as a
// frozen host's do) once it has led for a second, and returns who was
// elected after the crash, with the Recorder's verdict on the history.
func failover(t *testing.T, loop func(ctx context.Context, term events.Event, write func(events.Token)) error) (string, error) {
	b := memory.New()
	hosts := map[string]*hustingstest.Crashable{
		"a": hustingstest.NewCrashable(b),
		"b": hustingstest.NewCrashable(b),
	}
	rec := hustingstest.NewRecorder()
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	terms := make(chan events.Event, 4)
	for _, id := range []string{"a", "b"} {
		c, err := campaign.New(hosts[id], "reconcile", campaign.WithID(id),
			campaign.WithTTL(2*time.Second), campaign.WithRetry(250*time.Millisecond), rec.Option())
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			_ = campaign.WhileLeader(ctx, c, func(ctx context.Context, term events.Event) error {
				terms <- term
				return loop(ctx, term, func(tok events.Token) { rec.Wrote("reconcile", tok) })
			})
		})
		if id == "a" {
			<-terms // a leads before b starts
		}
	}
	time.Sleep(time.Second)
	hosts["a"].Crash()
	next := <-terms // b, once a's lease ran out
	time.Sleep(time.Second)
	hosts["a"].Refuse() // the crashed replica's Close fails at once
	cancel()
	wg.Wait()
	return next.Holder, rec.Check()
}

// TestReconcileStopsAtFailover is the test a user writes for a loop that
// must stop writing when its term ends: the leader's host crashes, the
// other replica takes over once the lease ran out, and the Recorder
// finds every write inside a term of its token, and no two terms at
// once. In a synctest bubble the 2 s TTL passes in virtual time: the
// test takes milliseconds.
func TestReconcileStopsAtFailover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		next, err := failover(t, reconcile)
		if next != "b" {
			t.Fatalf("after the crash %s was elected, want b", next)
		}
		if err != nil {
			t.Fatal(err)
		}
	})
}

// TestRecorderCatchesAWriteAfterTheTerm: a loop that writes once more
// after its term's context ended (a flush on the way out, unfenced) is
// the bug the Recorder is for.
func TestRecorderCatchesAWriteAfterTheTerm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		broken := func(ctx context.Context, term events.Event, write func(events.Token)) error {
			err := reconcile(ctx, term, write)
			time.Sleep(500 * time.Millisecond)
			write(term.Token) // too late: the term is over
			return err
		}
		_, err := failover(t, broken)
		if err == nil || !strings.Contains(err.Error(), "after its term ended") {
			t.Fatalf("Check = %v, want a write after its term ended", err)
		}
		t.Log(err)
	})
}

// TestRecorderOnOneShotRuns: RunIfLeader takes the Recorder's option,
// and a run's writes inside its function are inside its term.
func TestRecorderOnOneShotRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		rec := hustingstest.NewRecorder()
		for range 3 {
			res, err := campaign.RunIfLeader(t.Context(), b, "nightly", func(ctx context.Context, tok events.Token) (int, error) {
				rec.Wrote("nightly", tok)
				return 0, nil
			}, rec.Option())
			if err != nil || res.Outcome != campaign.Succeeded {
				t.Fatalf("RunIfLeader = %+v, %v", res, err)
			}
		}
		if err := rec.Check(); err != nil {
			t.Fatal(err)
		}
		rec.Wrote("nightly", 1) // after every run ended
		if err := rec.Check(); err == nil {
			t.Fatal("Check = nil after a write outside every run, want a violation")
		}
	})
}
