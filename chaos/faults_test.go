package chaos

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/hustings/hustings/chaos/history"
)

const (
	sigterm = syscall.SIGTERM
	// latency is the delay a slow link adds each way, ± latencyJitter.
	latency       = 200 * time.Millisecond
	latencyJitter = 50 * time.Millisecond
)

// faultOrder is the order faults are listed in, and menu their weights in
// the schedule.
var (
	faultOrder = []history.FaultKind{history.Kill, history.Stop, history.Pause, history.Blackhole, history.Reset, history.Latency, history.Restart, history.Tamper, history.Stall}
	menu       = []struct {
		kind   history.FaultKind
		weight int
	}{{history.Kill, 2}, {history.Stop, 2}, {history.Pause, 4}, {history.Blackhole, 2}, {history.Reset, 1}, {history.Latency, 2}, {history.Restart, 1}, {history.Tamper, 2}}
	// pauses are the lengths of SIGSTOP pauses, in TTLs.
	pauses = []float64{0.5, 1, 2, 5}
)

// nextFault draws a kind from the menu.
func (c *cluster) nextFault() history.FaultKind {
	total := 0
	for _, m := range menu {
		total += m.weight
	}
	n := c.rng.IntN(total)
	for _, m := range menu {
		if n -= m.weight; n < 0 {
			return m.kind
		}
	}
	panic("unreachable")
}

// ttls returns a random duration from lo to hi TTLs.
func (c *cluster) ttls(lo, hi float64) time.Duration {
	return time.Duration((lo + c.rng.Float64()*(hi-lo)) * float64(c.ttl))
}

// inject runs one fault of kind to its end and returns when it healed; ok
// is false if it had no target (no leader at the moment).
func (c *cluster) inject(kind history.FaultKind) (healed time.Time, ok bool) {
	leaders := c.leaders()
	needsLeader := kind == history.Kill || kind == history.Stop || kind == history.Pause || kind == history.Tamper
	if needsLeader && len(leaders) == 0 {
		return time.Time{}, false
	}
	target := pick(c.rng, c.live())
	if needsLeader || (len(leaders) > 0 && c.rng.IntN(2) == 0) {
		target = pick(c.rng, leaders)
	}
	f := history.Fault{Kind: kind, Node: target.id, From: time.Now()}
	switch kind {
	case history.Kill:
		c.t.Logf("kill %s", describe(target))
		target.kill()
		f.To = f.From
		c.add(target.name)
	case history.Stop:
		c.t.Logf("stop %s", describe(target))
		if err := target.stop(15 * time.Second); err != nil {
			c.t.Error(err)
		}
		f.To = f.From
		c.add(target.name)
	case history.Pause:
		d := time.Duration(pick(c.rng, pauses) * float64(c.ttl))
		c.t.Logf("pause %s for %v", describe(target), d)
		_ = target.signal(syscall.SIGSTOP)
		time.Sleep(d)
		_ = target.signal(syscall.SIGCONT)
	case history.Blackhole, history.Reset, history.Latency:
		d := c.ttls(0.5, 3)
		c.t.Logf("%s on %s's link for %v", kind, describe(target), d.Round(time.Millisecond))
		switch kind {
		case history.Blackhole:
			target.link.Blackhole()
		case history.Reset:
			target.link.Reset()
		default:
			target.link.Latency(latency, latencyJitter)
		}
		time.Sleep(d)
		target.link.Heal()
	case history.Tamper:
		l, ok := target.term()
		if !ok {
			return time.Time{}, false // it lost its term meanwhile
		}
		name := l.Name
		if name == groupName {
			name = fmt.Sprintf("%s/slot-%d", groupName, l.Slot)
		}
		c.t.Logf("tamper: delete %s's lock %s on the server", describe(target), name)
		f.From = time.Now()
		if err := c.srv.tamper(c.t.Context(), name, l.Token); err != nil {
			c.t.Logf("tamper %s: %v (nothing deleted)", name, err)
			return time.Time{}, false
		}
		f.To = f.From
	case history.Restart:
		f.Node = ""
		d := c.ttls(0, 1)
		c.t.Logf("restart the server, down for %v", d.Round(time.Millisecond))
		c.srv.down()
		time.Sleep(d)
		if err := c.srv.up(); err != nil {
			c.t.Fatalf("server did not come back: %v", err)
		}
		f.To = c.serving(30 * time.Second)
	}
	if f.To.IsZero() {
		f.To = time.Now()
	}
	c.faults = append(c.faults, f)
	return f.To, true
}

// run injects faults from the schedule until d has passed, waiting after
// each for beliefs to settle, then a random quiet gap.
func (c *cluster) run(d time.Duration) {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		healed, ok := c.inject(c.nextFault())
		if !ok {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		c.settle(healed, c.bounds.Settle+2*time.Second)
		time.Sleep(c.ttls(0, 1))
	}
}

// serving waits, up to d, until the harness's own client reads the
// backend again after a restart, and returns when it did: the server is
// healed for the candidates only then (a cold JVM on a busy machine can
// take seconds to answer its first clients after its port opens).
func (c *cluster) serving(d time.Duration) time.Time {
	limit := time.Now().Add(d)
	for {
		ctx, cancel := context.WithTimeout(c.t.Context(), 2*time.Second)
		_, err := c.direct.Holder(ctx, lockName)
		cancel()
		now := time.Now()
		if err == nil || now.After(limit) {
			if err != nil {
				c.t.Logf("the server answers no read %v after its restart: %v", d, err)
			}
			return now
		}
		time.Sleep(20 * time.Millisecond)
	}
}
