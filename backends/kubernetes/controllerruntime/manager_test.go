package crleader_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	clientset "k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/kubernetes"
	crleader "github.com/hustings/hustings/backends/kubernetes/controllerruntime"
	"github.com/hustings/hustings/backends/redis"
	"github.com/hustings/hustings/backends/redis/redistest"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/faultlink"
)

// ttl is the replicas' TTL: client-go then renews every 300 ms and gives
// a renewal up after 600 ms.
const ttl = 3 * time.Second

// runs numbers the namespaces of the tests' runs.
var runs atomic.Int64

// backend makes one replica's backend, its connections through a link of
// their own, which the test can blackhole as a SIGKILLed process's peer
// sees it.
type backend func(t *testing.T) (backends.Backend, *faultlink.Link)

// backendsUnderTest are the backends the managers elect on: Kubernetes
// Leases in the apiserver the managers use, and Redis, to show the lock
// is not tied to Leases.
func backendsUnderTest(t *testing.T) map[string]backend {
	ns := fmt.Sprintf("%s-%d", strings.ToLower(t.Name()), runs.Add(1)) // -count=N runs again
	namespace(t, ns)
	rs := redistest.Start(t)
	return map[string]backend{
		"kubernetes": func(t *testing.T) (backends.Backend, *faultlink.Link) {
			link := faultlink.NewLink(t, strings.TrimPrefix(srv.URL(), "https://"))
			cfg := config()
			cfg.Host = "https://" + link.Addr() // the server's certificate names 127.0.0.1, whatever the port
			cs, err := clientset.NewForConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			b, err := kubernetes.New(cs, ns)
			if err != nil {
				t.Fatal(err)
			}
			return b, link
		},
		"redis": func(t *testing.T) (backends.Backend, *faultlink.Link) {
			link := faultlink.NewLink(t, rs.Addr())
			b, err := redis.New(redistest.Client(t, link.Addr()))
			if err != nil {
				t.Fatal(err)
			}
			return b, link
		},
	}
}

// replica is one manager electing its leader on a crleader.Lock, with a
// leader runnable (Lock.WhileLeader) that records when it ran and under
// which term.
type replica struct {
	id   string
	lock *crleader.Lock
	link *faultlink.Link // the backend's

	led    chan struct{} // closed when the runnable starts
	ended  chan struct{} // closed when the runnable's context ended
	exited chan struct{} // closed when the manager's Start returned

	mu       sync.Mutex
	token    events.Token
	start    time.Time // the runnable started
	end      time.Time // its context ended
	cause    error     // why
	exitedAt time.Time
	err      error // Start's

	cancel context.CancelFunc
}

// startReplica starts a manager for id on a backend of its own, electing
// on the lock name.
func startReplica(t *testing.T, mk backend, name, id string) *replica {
	t.Helper()
	b, link := mk(t)
	r := &replica{id: id, link: link, led: make(chan struct{}), ended: make(chan struct{}), exited: make(chan struct{})}
	lock, err := crleader.NewLock(b, name, ttl, campaign.WithID(id), campaign.WithRetry(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	r.lock = lock
	probe, err := lock.WhileLeader(r.run)
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := manager.New(config(), lock.Options(manager.Options{
		Metrics: metricsserver.Options{BindAddress: "0"},
		Logger:  logr.Discard(),
	}))
	if err != nil {
		t.Fatal(err)
	}
	if err := mgr.Add(probe); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() {
		err := mgr.Start(ctx)
		r.mu.Lock()
		r.err, r.exitedAt = err, time.Now()
		r.mu.Unlock()
		close(r.exited)
	}()
	t.Cleanup(func() {
		cancel()
		<-r.exited
		if err := lock.Close(); err != nil {
			t.Errorf("%s: Close: %v", id, err)
		}
	})
	return r
}

// run is the leader runnable: it records its term and waits for its end.
func (r *replica) run(ctx context.Context) error {
	elected, ok := crleader.Term(ctx)
	r.mu.Lock()
	r.start, r.token = time.Now(), elected.Token
	r.mu.Unlock()
	if !ok || elected.Token == 0 || elected.Holder != r.id {
		return fmt.Errorf("%s: no term in the context: %v %v", r.id, elected, ok)
	}
	close(r.led)
	<-ctx.Done()
	r.mu.Lock()
	r.end, r.cause = time.Now(), context.Cause(ctx)
	r.mu.Unlock()
	close(r.ended)
	return nil
}

// snapshot returns what r recorded.
func (r *replica) snapshot() (token events.Token, start, end, exitedAt time.Time, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.token, r.start, r.end, r.exitedAt, r.err
}

// leaderAndFollower starts replica a on the lock name, then, once a leads,
// replica b, and checks that b does not lead while a does (for half the
// TTL: a renews in that time).
func leaderAndFollower(t *testing.T, mk backend, name string) (a, b *replica) {
	t.Helper()
	a = startReplica(t, mk, name, "a")
	wait(t, a.led, 10*time.Second, "a leads")
	b = startReplica(t, mk, name, "b")
	select {
	case <-b.led:
		t.Fatal("b leads while a does")
	case <-time.After(ttl / 2):
	}
	return a, b
}

// TestCrashFailover: the leading replica's backend stops answering (its
// calls hang, as a SIGKILLed process's would); its client-go is refused
// renewals once its term nears its local deadline, so its manager reports
// the loss and cancels its leader runnable, all before the other
// replica's manager leads, which it does once the backend has expired
// the first one's session.
func TestCrashFailover(t *testing.T) {
	for name, mk := range backendsUnderTest(t) {
		t.Run(name, func(t *testing.T) {
			a, b := leaderAndFollower(t, mk, "crash")

			cutAt := time.Now()
			a.link.Blackhole()
			t.Cleanup(a.link.Close) // before a's lock is closed, so that its campaign's calls end
			wait(t, a.ended, ttl, "a's runnable cancelled by its term's deadline")
			wait(t, b.led, 3*ttl, "b leads after a's session expired")
			wait(t, a.exited, ttl, "a's manager exits")

			aTok, _, aEnd, aExit, aErr := a.snapshot()
			bTok, bStart, _, _, _ := b.snapshot()
			if aErr == nil || !strings.Contains(aErr.Error(), "leader election lost") {
				t.Errorf("a's Start returned %v, want leader election lost", aErr)
			}
			if !aEnd.Before(bStart) || !aExit.Before(bStart) {
				t.Errorf("a's runnable ended %v and its manager exited %v after the cut; b led %v after it",
					aEnd.Sub(cutAt), aExit.Sub(cutAt), bStart.Sub(cutAt))
			}
			if bTok <= aTok {
				t.Errorf("b's token %d is not above a's %d", bTok, aTok)
			}
			a.mu.Lock()
			first := "client-go gave up first"
			if errors.Is(a.cause, crleader.ErrTermEnded) {
				first = "the term ended first" // client-go's timers ran late: the base context stopped the runnables
			}
			a.mu.Unlock()
			t.Logf("after the cut: a's runnable cancelled at %v (%s), a's manager exited at %v, b led at %v (ttl %v)",
				aEnd.Sub(cutAt).Round(time.Millisecond), first, aExit.Sub(cutAt).Round(time.Millisecond), bStart.Sub(cutAt).Round(time.Millisecond), ttl)
		})
	}
}

// TestGracefulHandover: the leading manager stops; it stops its leader
// runnable, client-go releases the lock, and the other manager, whose Get
// was waiting on its campaign, leads within milliseconds (asserted: well
// under the TTL), after the first runnable returned.
func TestGracefulHandover(t *testing.T) {
	for name, mk := range backendsUnderTest(t) {
		t.Run(name, func(t *testing.T) {
			a, b := leaderAndFollower(t, mk, "graceful")

			a.cancel()
			wait(t, a.exited, 10*time.Second, "a's manager stops")
			wait(t, b.led, ttl/2, "b leads")

			aTok, _, aEnd, aExit, aErr := a.snapshot()
			bTok, bStart, _, _, _ := b.snapshot()
			if aErr != nil {
				t.Errorf("a's Start: %v", aErr)
			}
			if !aEnd.Before(bStart) {
				t.Errorf("b led %v before a's runnable ended", aEnd.Sub(bStart))
			}
			if bTok <= aTok {
				t.Errorf("b's token %d is not above a's %d", bTok, aTok)
			}
			t.Logf("handover: b led %v after a's runnable ended, %v after a's manager returned",
				bStart.Sub(aEnd).Round(time.Microsecond), bStart.Sub(aExit).Round(time.Microsecond))
		})
	}
}
