package elector

import (
	"errors"
	"fmt"

	"github.com/hustings/hustings/events"
)

// FailureMode is what a one-shot run does when the backend fails; package
// campaign documents each.
type FailureMode int

// The failure modes.
const (
	Rethrow FailureMode = iota
	Skip
	FailOpenRun
)

// String returns "rethrow", "skip" or "fail-open-run".
func (m FailureMode) String() string {
	switch m {
	case Rethrow:
		return "rethrow"
	case Skip:
		return "skip"
	case FailOpenRun:
		return "fail-open-run"
	}
	return fmt.Sprintf("failure-mode(%d)", int(m))
}

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
// "resigned", "lease-expired", "session-lost", "lock-lost", "unreachable"
// or "canceled"; "other" for an error that wraps none of them, and "" for
// nil.
func ReasonCode(reason error) string {
	if reason == nil {
		return ""
	}
	for _, r := range []struct {
		err  error
		code string
	}{
		{events.ErrResigned, "resigned"},
		{events.ErrUnreachable, "unreachable"},
		{events.ErrLeaseExpired, "lease-expired"},
		{events.ErrSessionLost, "session-lost"},
		{events.ErrLockLost, "lock-lost"},
		{events.ErrCanceled, "canceled"},
	} {
		if errors.Is(reason, r.err) {
			return r.code
		}
	}
	return "other"
}
