package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

// leTiming is a client-go LeaderElector's timing: how long a lease lasts
// for the candidates that observe it, how long the leader keeps trying to
// renew before it gives up leading, and how often every candidate tries
// (the leader's renewal and a waiter's poll alike, stretched by a random
// 0–1.2 times).
type leTiming struct {
	lease, renewDeadline, retry time.Duration
}

// gap is the longest a waiting candidate sleeps between two tries: the
// retry period stretched by client-go's JitterFactor.
func (t leTiming) gap() time.Duration {
	return time.Duration(float64(t.retry) * (1 + leaderelection.JitterFactor))
}

func (t leTiming) String() string {
	return fmt.Sprintf("lease %v, renew deadline %v, retry %v", t.lease, t.renewDeadline, t.retry)
}

// clientGoDefaults is the timing client-go's own components use, and its
// examples: kube-controller-manager and kube-scheduler's defaults.
var clientGoDefaults = leTiming{lease: 15 * time.Second, renewDeadline: 10 * time.Second, retry: 2 * time.Second}

// tunedTiming is client-go's timing tuned to a Hustings candidate's: the
// lease its TTL, the renew deadline two thirds of it (client-go's own
// ratio, and where a Hustings session's last keep-alive before its
// deadline falls), the retry its retry interval.
func tunedTiming(ttl, retry time.Duration) leTiming {
	return leTiming{lease: ttl, renewDeadline: (ttl * 2 / 3).Round(time.Millisecond), retry: retry}
}

// The client-go subjects' names.
const (
	clientGoName  = "client-go LeaseLock"
	clientGoTuned = "client-go LeaseLock, tuned"
)

// kubePeers is client-go's leaderelection on a resourcelock.LeaseLock,
// as controllers use it, a clientset per candidate: with its defaults,
// and tuned to the lock workloads' TTL (peerTTL) and Hustings' retry
// (hustingsRetry).
func kubePeers(k *kubeClients) []peer {
	tuned := tunedTiming(peerTTL, hustingsRetry)
	return []peer{
		{name: clientGoName, note: clientGoNote(clientGoDefaults), gap: clientGoDefaults.gap(),
			open: func(context.Context) (locker, error) { return openLeaseLocker(k, clientGoDefaults) }},
		{name: clientGoTuned, note: clientGoNote(tuned), gap: tuned.gap(),
			open: func(context.Context) (locker, error) { return openLeaseLocker(k, tuned) }},
	}
}

func clientGoNote(t leTiming) string {
	return fmt.Sprintf("leaderelection.LeaderElector on a LeaseLock, %v, ReleaseOnCancel; a LeaderElector per run, a clientset per candidate", t)
}

// leaseLocker runs a critical section as a LeaderElector's term: Run
// until elected, the section, then cancel, which releases the Lease
// (ReleaseOnCancel).
type leaseLocker struct {
	cs     clientset.Interface
	closer func()
	id     string
	timing leTiming
}

func openLeaseLocker(k *kubeClients, t leTiming) (locker, error) {
	cs, closer, err := k.open(nil)
	if err != nil {
		return nil, err
	}
	return leaseLocker{cs: cs, closer: closer, id: fmt.Sprintf("client-go-%d", seq.Add(1)), timing: t}, nil
}

// run runs cs in its own goroutine, not in OnStartedLeading, which
// client-go starts in a goroutine that nothing waits for, and returns
// once Run has released the Lease.
func (l leaseLocker) run(ctx context.Context, name string, cs func()) error {
	ctx, cancel := context.WithCancel(quiet(ctx))
	defer cancel()
	elected := make(chan struct{})
	le, err := newElector(l.cs, "peer-"+name, l.id, l.timing, true, leaderelection.LeaderCallbacks{
		OnStartedLeading: func(context.Context) { close(elected) },
		OnStoppedLeading: func() {},
	})
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	wg.Go(func() { le.Run(ctx) })
	select {
	case <-elected:
		cs()
	case <-ctx.Done():
		err = fmt.Errorf("LeaderElector ended without leading: %w", context.Cause(ctx))
	}
	cancel()
	wg.Wait()
	return err
}

func (l leaseLocker) close() { l.closer() }

// newElector returns a LeaderElector for the Lease name in kubeNamespace.
func newElector(cs clientset.Interface, name, id string, t leTiming, release bool, cb leaderelection.LeaderCallbacks) (*leaderelection.LeaderElector, error) {
	return leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Name: name, Namespace: kubeNamespace},
			Client:     cs.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: id},
		},
		LeaseDuration:   t.lease,
		RenewDeadline:   t.renewDeadline,
		RetryPeriod:     t.retry,
		ReleaseOnCancel: release,
		Callbacks:       cb,
		Name:            name,
	})
}

// quiet gives ctx a logger that drops everything: a LeaderElector logs
// each acquisition at the default verbosity, through the context's logger.
func quiet(ctx context.Context) context.Context {
	return klog.NewContext(ctx, logr.Discard())
}
