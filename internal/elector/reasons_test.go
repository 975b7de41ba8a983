package elector

import (
	"errors"
	"fmt"
	"testing"

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
		{fmt.Errorf("%w: %w", events.ErrUnreachable, errors.New("dial tcp: refused")), "unreachable"},
		{fmt.Errorf("%w: gone", events.ErrSessionLost), "session-lost"},
		{events.ErrCanceled, "canceled"},
		{fmt.Errorf("%w: deleted", events.ErrLockLost), "lock-lost"},
		{errors.New("something else"), "other"},
	} {
		if got := ReasonCode(tc.reason); got != tc.want {
			t.Errorf("ReasonCode(%v) = %q, want %q", tc.reason, got, tc.want)
		}
	}
}
