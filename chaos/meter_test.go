package chaos

import (
	"context"
	"sync"
	"time"

	"github.com/hustings/hustings/chaos/history"
)

// The harness watches itself and the server while a run goes, so that a
// missed liveness bound can be told apart: the nodes' library, the test
// process that carries every node's link (and, for etcd, the server; for
// Kubernetes, the apiserver's etcd), or the server itself.
const (
	// probeEvery is how often the harness reads the backend directly (no
	// link); a read slower than probeSlow is recorded.
	probeEvery = 250 * time.Millisecond
	probeSlow  = 250 * time.Millisecond
)

// observer records the harness's own stalls (node "harness": its clock
// jumped, so it was not running) and the server's slow answers to direct
// reads (node "server"), as stalls in the run's history. They excuse no
// overlap and disturb no failover; the short profile counts its liveness
// bounds net of them (history.Config.NetOfOutages).
type observer struct {
	mu     sync.Mutex
	stalls []history.Fault
	stop   context.CancelFunc
	done   sync.WaitGroup
}

// observe starts the meter and the probe; c.direct must be open. halt
// stops them (cluster.history calls it, and the test's cleanup).
func (c *cluster) observe() *observer {
	ctx, cancel := context.WithCancel(context.Background())
	o := &observer{stop: cancel}
	o.done.Go(func() {
		clockJumps(ctx, func(from, to time.Time) {
			o.add(history.Fault{Kind: history.Stall, Node: history.Harness, From: from, To: to})
		})
	})
	o.done.Go(func() {
		t := time.NewTicker(probeEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			from := time.Now()
			_, err := c.direct.Holder(rctx, lockName)
			cancel()
			if to := time.Now(); (err != nil || to.Sub(from) > probeSlow) && ctx.Err() == nil {
				o.add(history.Fault{Kind: history.Stall, Node: history.Server, From: from, To: to})
			}
		}
	})
	return o
}

// clockJumps calls jumped for every gap between the ticks of a stallTick
// ticker above stallGap, until ctx ends: the process was not running (the
// scheduler, a GC pause, SIGSTOP), so timing-based beliefs may be stale.
func clockJumps(ctx context.Context, jumped func(from, to time.Time)) {
	t := time.NewTicker(stallTick)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if now.Sub(last) > stallGap {
				jumped(last, now)
			}
			last = now
		}
	}
}

func (o *observer) add(f history.Fault) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.stalls = append(o.stalls, f)
}

// outage returns how long the harness or the server stalled in [from, to]
// so far.
func (o *observer) outage(from, to time.Time) time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	return history.Outage(o.stalls, from, to)
}

// halt stops the meter and the probe and returns what they recorded.
func (o *observer) halt() []history.Fault {
	o.stop()
	o.done.Wait()
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.stalls
}
