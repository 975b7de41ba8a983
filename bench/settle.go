package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Settling: the servers go on working after they answer (the ZooKeeper
// JVM compiles, kube-apiserver runs its start-up hooks, PostgreSQL and
// MariaDB write their first checkpoints), and a workload measured in the
// first minute shares the CPUs with that work. settle waits for it to end
// before the first workload.
const (
	settleIdle   = 0.20            // busy share of all CPUs under which the machine counts as settled
	settleWindow = 3 * time.Second // over this long
	settleMost   = 2 * time.Minute // the longest settle waits
)

// settle waits until the machine's CPUs were busy less than settleIdle of
// a settleWindow, or settleMost passed, and returns how long it waited and
// the busy share of the last window.
func settle(ctx context.Context, stat func() (cpuTimes, error)) (time.Duration, float64, error) {
	start := time.Now()
	prev, err := stat()
	if err != nil {
		return 0, 0, err
	}
	for {
		select {
		case <-ctx.Done():
			return time.Since(start), 0, ctx.Err()
		case <-time.After(settleWindow):
		}
		cur, err := stat()
		if err != nil {
			return time.Since(start), 0, err
		}
		busy := cur.busySince(prev)
		if busy < settleIdle || time.Since(start) >= settleMost {
			return time.Since(start), busy, nil
		}
		prev = cur
	}
}

// cpuTimes are the machine's CPU times since boot, in clock ticks.
type cpuTimes struct{ busy, total uint64 }

// busySince returns the busy share of the CPU time between prev and t.
func (t cpuTimes) busySince(prev cpuTimes) float64 {
	if t.total <= prev.total {
		return 0
	}
	return float64(t.busy-prev.busy) / float64(t.total-prev.total)
}

// procStat reads the machine's CPU times from /proc/stat.
func procStat() (cpuTimes, error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTimes{}, err
	}
	return parseProcStat(string(data))
}

// parseProcStat reads the first line of /proc/stat: "cpu" then user,
// nice, system, idle, iowait, irq, softirq, steal, guest, guest_nice;
// idle and iowait are the time not busy, and guest and guest_nice are
// counted in user and nice already.
func parseProcStat(s string) (cpuTimes, error) {
	line, _, _ := strings.Cut(s, "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return cpuTimes{}, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	var t cpuTimes
	for i, v := range f[1:] {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return cpuTimes{}, fmt.Errorf("/proc/stat: %q: %w", line, err)
		}
		switch {
		case i == 3 || i == 4: // idle, iowait
			t.total += n
		case i < 8:
			t.busy += n
			t.total += n
		}
	}
	return t, nil
}
