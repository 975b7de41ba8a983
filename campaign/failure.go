package campaign

import (
	"github.com/hustings/hustings/internal/elector"
)

// WithSkipOnFailure reports a one-shot run whose backend failed as
// Skipped, with the backend's error in Result.Err, and returns no error:
// the work waits for the next run, as after contention. By default, when
// the backend fails (unreachable, timed out, erroring) and the lock cannot
// be had, the run returns the backend's error, wrapped (errors.Is matches
// the errors of package backends); WithSkipOnFailure and WithFailOpen
// choose otherwise, and given both, the last one wins. Contention is never
// a failure: a lock held by another candidate is always Skipped, with
// Result.Err nil. Applies to RunIfLeader, Every and group.RunIfLeader.
func WithSkipOnFailure() Option {
	return elector.Opt("WithSkipOnFailure", elector.ForRun|elector.ForEvery, func(c *elector.Config) { c.FailureMode = elector.Skip })
}

// WithFailOpen runs fn without the lock when the backend fails: fn gets
// token 0 (Result.Token is 0; a held lock's token never is), and the
// backend's error is logged and counted. It is for work whose duplicate
// run is harmless and whose missed run is not (cache warming, best-effort
// notifications); it is wrong for payments, migrations and anything that
// must happen at most once, since every replica that loses the backend
// runs it. Applies to RunIfLeader, Every and group.RunIfLeader.
func WithFailOpen() Option {
	return elector.Opt("WithFailOpen", elector.ForRun|elector.ForEvery, func(c *elector.Config) { c.FailureMode = elector.FailOpenRun })
}
