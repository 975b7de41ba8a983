package memberlist_test

import (
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(settled{m}) }

// settled runs the tests, then waits until no goroutine is left over, for
// at most settleLimit, before goleak.VerifyTestMain checks for real.
// memberlist's Shutdown does not wait for its goroutines: a probe under
// way (or its TCP fallback, or a nack timer) ends by itself a few probe
// intervals later. Waiting here ignores nothing: a goroutine that is
// still there after the wait is reported as a leak.
type settled struct{ m *testing.M }

const settleLimit = 20 * time.Second

func (s settled) Run() int {
	code := s.m.Run()
	for deadline := time.Now().Add(settleLimit); time.Now().Before(deadline); {
		if goleak.Find() == nil {
			break
		}
	}
	return code
}
