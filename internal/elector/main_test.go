package elector

import (
	"testing"

	"go.uber.org/goleak"
)

// The engine's behaviour is tested through packages campaign and group;
// the tests here are of its pure parts.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
