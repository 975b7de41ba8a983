package campaign

import (
	"errors"
	"time"

	"github.com/hustings/hustings/internal/elector"
)

// WithClock makes Every read the time from now instead of time.Now, so a
// test can skew one replica's clock against another's. It is for tests
// only: a process's windows follow its own clock.
func WithClock(now func() time.Time) Option {
	return elector.Opt("WithClock", elector.ForEvery, func(c *elector.Config) {
		c.Now = now
		if now == nil {
			c.Reject(errors.New("nil clock"))
		}
	})
}
