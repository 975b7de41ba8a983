package nats_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/hustings/hustings/internal/faultlink"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, faultlink.KnownLeaks()...) }
