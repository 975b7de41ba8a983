package campaign

import (
	"github.com/hustings/hustings/internal/elector"
)

// WithFailOpen runs fn without the lock when the backend fails
// (unreachable, timed out, erroring) and the lock cannot be had: fn gets
// token 0 (Result.Token is 0; a held lock's token never is), and the
// backend's error is logged and counted. It is for work whose duplicate
// run is harmless and whose missed run is not (cache warming, best-effort
// notifications); it is wrong for payments, migrations and anything that
// must happen at most once, since every replica that loses the backend
// runs it. Without it, such a run returns the backend's error, wrapped
// (errors.Is matches the errors of package backends). Contention is never
// a failure: a lock held by another candidate is always Skipped. Applies
// to RunIfLeader, Every and group.RunIfLeader.
func WithFailOpen() Option {
	return elector.Opt("WithFailOpen", elector.ForRun|elector.ForEvery, func(c *elector.Config) { c.FailOpen = true })
}
