package elector

import (
	"context"
	"errors"
	"fmt"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
)

// Reason says why a try ended without the lock, or that a run went on
// without it; its String is the metric label. Package campaign documents
// the ones a Result carries.
type Reason int

// The reasons. Canceled and InvalidInput end a try before anything was decided
// (its context ended, its input was bad); only metrics see them.
const (
	NoReason Reason = iota
	Contention
	BackendError
	FailOpenForced
	Canceled
	InvalidInput
)

// String returns "", "contention", "backend-error", "fail-open-forced",
// "canceled" or "invalid".
func (r Reason) String() string {
	switch r {
	case NoReason:
		return ""
	case Contention:
		return "contention"
	case BackendError:
		return "backend-error"
	case FailOpenForced:
		return "fail-open-forced"
	case Canceled:
		return "canceled"
	case InvalidInput:
		return "invalid"
	}
	return fmt.Sprintf("reason(%d)", int(r))
}

// ReasonCode returns the short, stable code of a revocation reason (an
// events.Err* value, possibly wrapped), for metric labels and traces:
// "resigned", "canceled" (resigned because the campaign's context
// ended), "lease-expired", "unreachable" (expired while the backend was
// unavailable), "session-lost" or "lock-lost"; "other" for an error that
// wraps none of them, and "" for nil.
func ReasonCode(reason error) string {
	switch {
	case reason == nil:
		return ""
	case errors.Is(reason, events.ErrResigned) && (errors.Is(reason, context.Canceled) || errors.Is(reason, context.DeadlineExceeded)):
		return "canceled"
	case errors.Is(reason, events.ErrResigned):
		return "resigned"
	case errors.Is(reason, events.ErrLeaseExpired) && errors.Is(reason, backends.ErrUnavailable):
		return "unreachable"
	case errors.Is(reason, events.ErrLeaseExpired):
		return "lease-expired"
	case errors.Is(reason, events.ErrSessionLost):
		return "session-lost"
	case errors.Is(reason, events.ErrLockLost):
		return "lock-lost"
	}
	return "other"
}
