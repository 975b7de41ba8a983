package crleader_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/hustings/hustings/backends/kubernetes/controllerruntime"
	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
)

// worked is what one term's work saw: its term, and when it ended.
type worked struct {
	id      string
	elected events.Event
	ok      bool
	ended   chan time.Time
}

// TestWhileLeaderOwnCampaign: two managers without leader election each
// run the work on a campaign of their own (memory backend): one works,
// with its term in the context; when its manager stops, its work returns
// before the other's starts, under a larger token.
func TestWhileLeaderOwnCampaign(t *testing.T) {
	b := memory.New()
	started := make(chan worked, 2)
	stop := map[string]context.CancelFunc{}
	for _, id := range []string{"a", "c"} {
		c, err := campaign.New(b, "shard-0", campaign.WithID(id), campaign.WithRetry(50*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		r, err := crleader.WhileLeader(c, func(ctx context.Context) error {
			w := worked{id: id, ended: make(chan time.Time, 1)}
			w.elected, w.ok = crleader.Term(ctx)
			started <- w
			<-ctx.Done()
			w.ended <- time.Now()
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if r.NeedLeaderElection() {
			t.Error("WhileLeader's Runnable waits for the manager's election")
		}
		mgr, err := manager.New(config(nil), manager.Options{Metrics: metricsserver.Options{BindAddress: "0"}, Logger: logr.Discard()})
		if err != nil {
			t.Fatal(err)
		}
		if err := mgr.Add(r); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		stop[id] = cancel
		go func() { done <- mgr.Start(ctx) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("%s's manager: %v", id, err)
			}
		})
	}

	first := receive(t, started)
	if !first.ok || first.elected.Holder != first.id || first.elected.Token == 0 {
		t.Fatalf("%s's work has term %v (%v) in its context", first.id, first.elected, first.ok)
	}
	select {
	case w := <-started:
		t.Fatalf("%s works while %s does", w.id, first.id)
	case <-time.After(300 * time.Millisecond):
	}
	stop[first.id]()
	second := receive(t, started)
	ended := <-first.ended
	if second.id == first.id || second.elected.Token <= first.elected.Token {
		t.Errorf("after %s (token %d) stopped, %s works under token %d", first.id, first.elected.Token, second.id, second.elected.Token)
	}
	if second.elected.Time.Before(ended) {
		t.Errorf("%s was elected %v before %s's work returned", second.id, ended.Sub(second.elected.Time), first.id)
	}
}

// receive waits for a term's work to start.
func receive(t *testing.T, ch <-chan worked) worked {
	t.Helper()
	select {
	case w := <-ch:
		return w
	case <-time.After(10 * time.Second):
		t.Fatal("no work started within 10 s")
		return worked{}
	}
}
