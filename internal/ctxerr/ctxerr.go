// Package ctxerr tells whether a client's failure was its context's doing,
// for the backends' error translation.
package ctxerr

import (
	"context"
	"errors"
	"net"
	"time"
)

// Of returns ctx's error if err is its doing, or nil. A read cut short by
// the context's deadline is reported by the drivers as a network timeout,
// sometimes a moment before ctx.Err() says so: such a timeout within a
// millisecond of the deadline counts as context.DeadlineExceeded.
func Of(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	var ne net.Error
	if dl, ok := ctx.Deadline(); ok && errors.As(err, &ne) && ne.Timeout() && !time.Now().Add(time.Millisecond).Before(dl) {
		return context.DeadlineExceeded
	}
	return nil
}
