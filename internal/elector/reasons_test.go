package elector

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
)

func TestReasonCode(t *testing.T) {
	for _, tc := range []struct {
		reason error
		want   string
	}{
		{nil, ""},
		{events.ErrResigned, "resigned"},
		{events.ErrLeaseExpired, "lease-expired"},
		{fmt.Errorf("%w: %w: dial tcp: refused", events.ErrLeaseExpired, backends.ErrUnavailable), "unreachable"},
		{fmt.Errorf("%w: gone", events.ErrSessionLost), "session-lost"},
		{fmt.Errorf("%w: %w", events.ErrResigned, context.Canceled), "canceled"},
		{fmt.Errorf("%w: %w", events.ErrResigned, context.DeadlineExceeded), "canceled"},
		{fmt.Errorf("%w: deleted", events.ErrLockLost), "lock-lost"},
		{errors.New("something else"), "other"},
	} {
		if got := ReasonCode(tc.reason); got != tc.want {
			t.Errorf("ReasonCode(%v) = %q, want %q", tc.reason, got, tc.want)
		}
	}
}
