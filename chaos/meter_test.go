package chaos

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/chaos/history"
)

// The harness watches itself and the server while a run goes, so that a
// missed liveness bound can be told apart: the nodes' library, the test
// process that carries every node's link (and, for etcd, the server; for
// Kubernetes, the apiserver's etcd), or the server itself.
const (
	// probeEvery is how often the harness reads and writes the backend
	// directly (no link); a call slower than probeSlow is recorded.
	probeEvery = 250 * time.Millisecond
	probeSlow  = 250 * time.Millisecond
	// probeID is the candidate ID of the probe's session, which holds no
	// lock.
	probeID = "chaos-probe"
)

// observer records the harness's own stalls (node "harness": its clock
// jumped, so it was not running) and the server's slow answers to direct
// reads and renewals (node "server"), as stalls in the run's history. They excuse no
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
	o.done.Go(func() { c.probe(ctx, o) })
	return o
}

// probe reads the backend directly (Holder of the lock) and renews a
// session of its own (the nodes' TTL; one that lapses while the server is
// away would hold up PostgreSQL's restore after a crash like any
// vanished candidate's), every probeEvery until ctx ends, and records a
// server stall for each call that failed or took over probeSlow. Reads
// alone missed a server that answered them at once but kept every write
// waiting (FerretDB over SQLite on a busy machine serializes its writes
// behind a busy wait): the nodes' renewals and takes stalled for seconds,
// and a settle that waited on them was counted as a liveness failure of
// the library.
func (c *cluster) probe(ctx context.Context, o *observer) {
	var s backends.Session
	defer func() {
		if s != nil {
			cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = s.Close(cctx)
			cancel()
		}
	}()
	timed := func(call func(context.Context) error) {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		from := time.Now()
		err := call(rctx)
		if to := time.Now(); (err != nil || to.Sub(from) > probeSlow) && ctx.Err() == nil {
			o.add(history.Fault{Kind: history.Stall, Node: history.Server, From: from, To: to})
		}
	}
	t := time.NewTicker(probeEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		timed(func(ctx context.Context) error {
			_, err := c.direct.Holder(ctx, lockName)
			return err
		})
		timed(func(ctx context.Context) (err error) {
			if s == nil {
				s, err = c.direct.Open(ctx, probeID, c.ttl)
				return err
			}
			if err = s.KeepAlive(ctx); errors.Is(err, backends.ErrSessionLost) {
				_ = s.Close(ctx)
				s = nil // open another
			}
			return err
		})
	}
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
