package main

import (
	"context"
	"testing"
	"testing/synctest"
)

func TestParseProcStat(t *testing.T) {
	got, err := parseProcStat("cpu  100 5 50 800 40 3 2 0 7 1\ncpu0 1 2 3 4\n")
	if err != nil {
		t.Fatal(err)
	}
	// busy: user 100 + nice 5 + system 50 + irq 3 + softirq 2 + steal 0;
	// total: all ten less guest and guest_nice (inside user and nice).
	if want := (cpuTimes{busy: 160, total: 1000}); got != want {
		t.Fatalf("parseProcStat = %+v, want %+v", got, want)
	}
	for _, bad := range []string{"", "intr 1 2 3", "cpu 1 2 x 4 5"} {
		if _, err := parseProcStat(bad); err == nil {
			t.Errorf("parseProcStat(%q): no error", bad)
		}
	}
}

// settle waits while the machine is busy and returns once a window was
// idle enough, or once it waited its most.
func TestSettle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		busy := []float64{0.9, 0.6, 0.1} // the busy share of each window in turn
		var now cpuTimes
		stat := func() (cpuTimes, error) {
			if len(busy) > 0 && now.total > 0 {
				now.busy += uint64(busy[0] * 1000)
				busy = busy[1:]
			}
			now.total += 1000
			return now, nil
		}
		waited, share, err := settle(context.Background(), stat)
		if err != nil {
			t.Fatal(err)
		}
		if waited != 3*settleWindow || share != 0.1 {
			t.Fatalf("settle waited %v (busy %.2f), want %v (busy 0.10)", waited, share, 3*settleWindow)
		}

		always := func() (cpuTimes, error) { now.busy += 1000; now.total += 1000; return now, nil }
		if waited, share, _ := settle(context.Background(), always); waited < settleMost || waited > settleMost+settleWindow || share != 1 {
			t.Fatalf("settle on a machine always busy waited %v (busy %.2f), want its most, %v", waited, share, settleMost)
		}
	})
}
