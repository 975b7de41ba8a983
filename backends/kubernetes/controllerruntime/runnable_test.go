package crleader_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	crleader "github.com/hustings/hustings/backends/kubernetes/controllerruntime"
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
		mgr, err := manager.New(config(), manager.Options{Metrics: metricsserver.Options{BindAddress: "0"}, Logger: logr.Discard()})
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

	first := wait(t, started, 10*time.Second, "a term's work starts")
	if !first.ok || first.elected.Holder != first.id || first.elected.Token == 0 {
		t.Fatalf("%s's work has term %v (%v) in its context", first.id, first.elected, first.ok)
	}
	select {
	case w := <-started:
		t.Fatalf("%s works while %s does", w.id, first.id)
	case <-time.After(300 * time.Millisecond):
	}
	stop[first.id]()
	second := wait(t, started, 10*time.Second, "the other's work starts")
	ended := <-first.ended
	if second.id == first.id || second.elected.Token <= first.elected.Token {
		t.Errorf("after %s (token %d) stopped, %s works under token %d", first.id, first.elected.Token, second.id, second.elected.Token)
	}
	if second.elected.Time.Before(ended) {
		t.Errorf("%s was elected %v before %s's work returned", second.id, ended.Sub(second.elected.Time), first.id)
	}
}

// ending is when a runnable's context ended, and why.
type ending struct {
	at    time.Time
	cause error
}

// TestLockTakenFromUnderTheTerm: when the lock is deleted behind the
// leader's back, Lock.WhileLeader's work and the manager's other leader
// runnables (a controller would be one) are cancelled as soon as the
// campaign notices, before client-go reports the loss and the manager
// exits.
func TestLockTakenFromUnderTheTerm(t *testing.T) {
	b := memory.New()
	lock, err := crleader.NewLock(b, "taken", time.Second, campaign.WithID("a"))
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	led, ended := make(chan events.Event, 1), make(chan ending, 1)
	work, err := lock.WhileLeader(func(ctx context.Context) error {
		term, _ := crleader.Term(ctx)
		led <- term
		<-ctx.Done()
		ended <- ending{time.Now(), context.Cause(ctx)}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !work.NeedLeaderElection() {
		t.Error("Lock.WhileLeader's Runnable does not wait for the manager's election")
	}
	mgr, err := manager.New(config(), lock.Options(manager.Options{Metrics: metricsserver.Options{BindAddress: "0"}, Logger: logr.Discard()}))
	if err != nil {
		t.Fatal(err)
	}
	if err := mgr.Add(work); err != nil {
		t.Fatal(err)
	}
	other := make(chan ending, 1)
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		other <- ending{time.Now(), context.Cause(ctx)}
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	exited, exitedAt := make(chan error, 1), make(chan time.Time, 1)
	go func() {
		err := mgr.Start(ctx)
		exitedAt <- time.Now()
		exited <- err
	}()

	term := wait(t, led, 10*time.Second, "the manager leads")
	b.Delete(term.Name)
	work0 := wait(t, ended, 5*time.Second, "the work's end after its lock was deleted")
	if err := wait(t, exited, 5*time.Second, "the manager's exit after its lock was deleted"); err == nil || !strings.Contains(err.Error(), "leader election lost") {
		t.Errorf("Start returned %v, want leader election lost", err)
	}
	at, other0 := <-exitedAt, <-other
	for what, e := range map[string]ending{"the work": work0, "the other runnable": other0} {
		if !errors.Is(e.cause, crleader.ErrTermEnded) || !e.at.Before(at) {
			t.Errorf("%s's context ended %v before the manager exited, for %v; want ErrTermEnded", what, at.Sub(e.at), e.cause)
		}
	}
	t.Logf("the runnables were cancelled %v before the manager exited", at.Sub(work0.at).Round(time.Millisecond))
}
