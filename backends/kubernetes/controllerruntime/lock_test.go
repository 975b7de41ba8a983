package crleader_test

import (
	"context"
	"errors"
	"testing"
	"time"

	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/kubernetes"
	crleader "github.com/hustings/hustings/backends/kubernetes/controllerruntime"
	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/campaign"
)

// newLock returns a lock for id on b, closed when the test ends.
func newLock(t *testing.T, b *memory.Backend, id string, opts ...campaign.Option) *crleader.Lock {
	t.Helper()
	l, err := crleader.NewLock(b, "lock", time.Second, append([]campaign.Option{campaign.WithID(id), campaign.WithRetry(50 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return l
}

// mine is the record client-go writes for l.
func mine(l *crleader.Lock) resourcelock.LeaderElectionRecord {
	return resourcelock.LeaderElectionRecord{HolderIdentity: l.Identity()}
}

// TestGetWaitsForElection: Get returns the record of the campaign's term,
// and blocks while another candidate holds the lock, until it releases.
func TestGetWaitsForElection(t *testing.T) {
	b := memory.New()
	a, c := newLock(t, b, "a"), newLock(t, b, "c")
	ctx := context.Background()
	rec, raw, err := a.Get(ctx)
	if err != nil || rec.HolderIdentity != "a" || rec.LeaderTransitions <= 0 || len(raw) == 0 {
		t.Fatalf("a.Get = %+v, %q, %v; want a's term, its token in LeaderTransitions", rec, raw, err)
	}
	if err := a.Update(ctx, mine(a)); err != nil {
		t.Fatalf("a.Update: %v", err)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if rec, _, err := c.Get(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("c.Get while a leads = %+v, %v; want it to wait until its context ends", rec, err)
	}
	if err := c.Update(ctx, mine(c)); !errors.Is(err, crleader.ErrNotLeader) {
		t.Fatalf("c.Update while a leads: %v, want ErrNotLeader", err)
	}

	got := make(chan error, 1)
	go func() {
		rec, _, err := c.Get(ctx)
		if err == nil && rec.HolderIdentity != "c" {
			err = errors.New("c.Get returned " + rec.HolderIdentity)
		}
		got <- err
	}()
	if err := a.Update(ctx, resourcelock.LeaderElectionRecord{}); err != nil { // client-go's release
		t.Fatalf("a's release: %v", err)
	}
	if err := wait(t, got, 5*time.Second, "c.Get returns after a's release"); err != nil {
		t.Fatal(err)
	}
	if err := c.Update(ctx, mine(c)); err != nil {
		t.Fatalf("c.Update after a's release: %v", err)
	}
	if _, _, err := a.Get(ctx); !errors.Is(err, crleader.ErrTermEnded) {
		t.Errorf("a.Get after its release: %v, want ErrTermEnded", err)
	}
}

// TestTermEndRefusesClientGo: once the term client-go was granted ends
// (here: the backend is cut off and the deadline passes), Update and Get
// fail for good, even after the backend heals.
func TestTermEndRefusesClientGo(t *testing.T) {
	b := memory.New()
	a := newLock(t, b, "a")
	ctx := context.Background()
	if _, _, err := a.Get(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Update(ctx, mine(a)); err != nil {
		t.Fatal(err)
	}
	ended := a.Options(manager.Options{}).BaseContext() // cancelled when the granted term ends
	b.Partition("a")
	wait(t, ended.Done(), 5*time.Second, "the term's end after the backend was cut off")
	if err := a.Update(ctx, mine(a)); !errors.Is(err, crleader.ErrTermEnded) {
		t.Errorf("Update once the term ended: %v, want ErrTermEnded", err)
	}
	b.Heal("a")
	if _, _, err := a.Get(ctx); !errors.Is(err, crleader.ErrTermEnded) {
		t.Errorf("Get after the term ended: %v, want ErrTermEnded", err)
	}
	if err := a.Update(ctx, mine(a)); !errors.Is(err, crleader.ErrTermEnded) {
		t.Errorf("Update after the term ended: %v, want ErrTermEnded", err)
	}
}

// TestUpdateRefuses: Update tells client-go it may lead only when it is
// safe, and rejects what it cannot honour.
func TestUpdateRefuses(t *testing.T) {
	ctx := context.Background()
	t.Run("a term too close to its deadline", func(t *testing.T) {
		// TTL 1 s, margin 650 ms: a term has 350 ms when elected, under
		// the 420 ms client-go may lead on after a renewal.
		a := newLock(t, memory.New(), "a", campaign.WithSafetyMargin(650*time.Millisecond))
		if _, _, err := a.Get(ctx); err != nil {
			t.Fatal(err)
		}
		if err := a.Update(ctx, mine(a)); !errors.Is(err, crleader.ErrNotLeader) {
			t.Errorf("Update: %v, want ErrNotLeader", err)
		}
	})
	t.Run("a longer RenewDeadline than the lock's", func(t *testing.T) {
		a := newLock(t, memory.New(), "a")
		if _, _, err := a.Get(ctx); err != nil {
			t.Fatal(err)
		}
		poll, cancel := context.WithTimeout(ctx, time.Second) // the lock's is 200 ms
		defer cancel()
		if err := a.Update(poll, mine(a)); !errors.Is(err, campaign.ErrInvalid) {
			t.Errorf("Update: %v, want ErrInvalid", err)
		}
	})
	t.Run("another identity", func(t *testing.T) {
		a := newLock(t, memory.New(), "a")
		rec := resourcelock.LeaderElectionRecord{HolderIdentity: "b"}
		if err := a.Update(ctx, rec); !errors.Is(err, campaign.ErrInvalid) {
			t.Errorf("Update: %v, want ErrInvalid", err)
		}
	})
	t.Run("after client-go's release", func(t *testing.T) {
		a := newLock(t, memory.New(), "a")
		if err := a.Update(ctx, resourcelock.LeaderElectionRecord{}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := a.Get(ctx); !errors.Is(err, crleader.ErrTermEnded) {
			t.Errorf("Get: %v, want ErrTermEnded", err)
		}
	})
	t.Run("after Close", func(t *testing.T) {
		a := newLock(t, memory.New(), "a")
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		if _, _, err := a.Get(ctx); !errors.Is(err, campaign.ErrClosed) {
			t.Errorf("Get: %v, want ErrClosed", err)
		}
		if err := a.Update(ctx, mine(a)); !errors.Is(err, campaign.ErrClosed) {
			t.Errorf("Update: %v, want ErrClosed", err)
		}
	})
}

// TestBadInput: bad arguments are errors matching campaign.ErrInvalid.
func TestBadInput(t *testing.T) {
	b := memory.New()
	if _, err := crleader.NewLock(b, "lock", 0); !errors.Is(err, campaign.ErrInvalid) {
		t.Errorf("NewLock with TTL 0: %v", err)
	}
	if _, err := crleader.NewLock(b, "", time.Second); !errors.Is(err, campaign.ErrInvalid) {
		t.Errorf("NewLock with no name: %v", err)
	}
	if _, err := crleader.WhileLeader(nil, func(context.Context) error { return nil }); !errors.Is(err, campaign.ErrInvalid) {
		t.Errorf("WhileLeader(nil, fn): %v", err)
	}
	c, err := campaign.New(b, "lock")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := crleader.WhileLeader(c, nil); !errors.Is(err, campaign.ErrInvalid) {
		t.Errorf("WhileLeader(c, nil): %v", err)
	}
	l := newLock(t, b, "a")
	if _, err := l.WhileLeader(nil); !errors.Is(err, campaign.ErrInvalid) {
		t.Errorf("Lock.WhileLeader(nil): %v", err)
	}
}

// TestGetReportsARefusedSession: a campaign whose backend refuses its
// session (here: a namespace that does not exist) ends, and Get says why
// instead of waiting for an election that cannot come.
func TestGetReportsARefusedSession(t *testing.T) {
	cs, err := clientset.NewForConfig(config())
	if err != nil {
		t.Fatal(err)
	}
	b, err := kubernetes.New(cs, "no-such-namespace")
	if err != nil {
		t.Fatal(err)
	}
	l, err := crleader.NewLock(b, "lock", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, _, err := l.Get(ctx); !errors.Is(err, backends.ErrInvalid) {
		t.Errorf("Get: %v, want the backend's ErrInvalid", err)
	}
}

// TestOptionsBaseContext: the runnables' base context keeps the caller's
// values, and is cancelled with ErrTermEnded when a term the manager was
// granted ends (here: client-go's release).
func TestOptionsBaseContext(t *testing.T) {
	type key struct{}
	a := newLock(t, memory.New(), "a")
	o := a.Options(manager.Options{BaseContext: func() context.Context {
		return context.WithValue(context.Background(), key{}, "mine")
	}})
	if o.LeaderElectionResourceLockInterface != a || !o.LeaderElection || !o.LeaderElectionReleaseOnCancel {
		t.Errorf("Options = %+v", o)
	}
	base := o.BaseContext()
	if base.Value(key{}) != "mine" {
		t.Error("the base context lost the caller's values")
	}
	ctx := context.Background()
	if _, _, err := a.Get(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Update(ctx, mine(a)); err != nil {
		t.Fatal(err)
	}
	if base.Err() != nil {
		t.Fatal("the base context ended while the manager leads")
	}
	if err := a.Update(ctx, resourcelock.LeaderElectionRecord{}); err != nil {
		t.Fatal(err)
	}
	wait(t, base.Done(), 5*time.Second, "the base context's end after the term ended")
	if cause := context.Cause(base); !errors.Is(cause, crleader.ErrTermEnded) {
		t.Errorf("the base context ended with %v, want ErrTermEnded", cause)
	}
}
