package campaign

import (
	"github.com/hustings/hustings/internal/elector"
)

// FailureMode says what RunIfLeader, Every and group.RunIfLeader do when the
// lock cannot be had because the backend failed (unreachable, timed out,
// erroring). Contention is never a failure: a lock held by another
// candidate is always Skipped. Its String is "rethrow", "skip" or
// "fail-open-run".
type FailureMode = elector.FailureMode

const (
	// Rethrow returns the backend's error, wrapped (errors.Is matches the
	// errors of package backends). The default.
	Rethrow = elector.Rethrow
	// Skip reports the run as Skipped, with Cause BackendError and the
	// error in Result.Err, and returns no error: the work waits for the
	// next run, as after contention.
	Skip = elector.Skip
	// FailOpenRun runs fn without the lock (Result.Token is 0, Cause
	// FailOpenForced). It is for work whose duplicate run is harmless and
	// whose missed run is not (cache warming, best-effort notifications);
	// it is wrong for payments, migrations and anything that must happen
	// at most once, since every replica that loses the backend runs it.
	FailOpenRun = elector.FailOpenRun
)

// Cause says what made a one-shot run skip, or run without the lock. Its
// String is "", "contention", "backend-error" or "fail-open-forced", the
// label of the metrics that count them.
type Cause = elector.Reason

const (
	// NoCause: the run had the lock (or failed before deciding).
	NoCause = elector.NoReason
	// Contention: another candidate holds the lock.
	Contention = elector.Contention
	// BackendError: the backend failed and the failure mode is Skip.
	BackendError = elector.BackendError
	// FailOpenForced: the backend failed and fn ran without the lock
	// (FailOpenRun).
	FailOpenForced = elector.FailOpenForced
)

// WithFailureMode sets what a one-shot run does when the backend fails.
// Default Rethrow. Applies to RunIfLeader, Every and group.RunIfLeader.
func WithFailureMode(m FailureMode) Option {
	return elector.Opt("WithFailureMode", elector.ForRun|elector.ForEvery, func(c *elector.Config) { c.FailureMode = m })
}
