package etcd

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/hustings/hustings/backends"
)

// translate maps an error of the etcd client onto the errors of package
// backends: a lease the server does not know is a lost session, a TTL it
// refuses is bad input, and everything else (a done context, an
// unreachable or leaderless server, a timeout) is ErrUnavailable. When ctx
// is done the result also matches ctx.Err().
func translate(ctx context.Context, what string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, rpctypes.ErrLeaseNotFound):
		return fmt.Errorf("etcd: %s: %w: %w", what, backends.ErrSessionLost, err)
	case errors.Is(err, rpctypes.ErrLeaseTTLTooLarge):
		return fmt.Errorf("%w: etcd: %s: %w", backends.ErrInvalid, what, err)
	}
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w: etcd: %s: %w (%w)", backends.ErrUnavailable, what, cerr, err)
	}
	return fmt.Errorf("%w: etcd: %s: %w", backends.ErrUnavailable, what, err)
}

// ctxErr returns an error matching backends.ErrUnavailable and ctx.Err()
// if ctx is done, so that no request is sent on a done context.
func ctxErr(ctx context.Context, what string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: etcd: %s: %w", backends.ErrUnavailable, what, err)
	}
	return nil
}
