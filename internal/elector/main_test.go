package elector

import (
	"testing"

	"go.uber.org/goleak"
)

// The engine's behaviour is tested through packages campaign and group;
// the tests here are of its parts: rankings, the limiter, doubt, and the
// scheduling of an actor's calls (schedule_test.go).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
