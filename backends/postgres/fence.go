package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/validate"
)

// fenceSQL finds the lock row held under the token, live, and locks it
// FOR SHARE until the caller's transaction ends: a take-over changes the
// row, so it waits for that transaction. The session is judged alive by a
// plain read, which is sound (see acquireSQL); it need not be locked, as
// no take-over can happen without the lock row. clock_timestamp(), not
// now(): a transaction may have begun long before.
const fenceSQL = `SELECT 1 FROM {locks} l
WHERE l.name = $1 AND l.token = $2 AND NOT l.hold AND ` + liveSQL + `
FOR SHARE OF l`

// Fence checks, inside the caller's own transaction tx, that the lock
// name is still held under token, and keeps it so until tx ends: it takes
// the lock row FOR SHARE, so a take-over waits for tx to commit or roll
// back. A leader that writes in tx after Fence returned nil therefore
// commits before any later term begins, and a stale leader's Fence (its
// session expired, its lease ended, or its lock released or taken over)
// returns an error matching backends.ErrNotHeld: roll tx back. tx may run
// on any pool or connection to the database holding b's tables; it is
// read in b's schema.
//
// Keep fenced transactions short: while tx runs, a take-over of the lock
// waits, and so does a Watch that marks the lock's row (the holder's
// KeepAlive does not: it writes the session row alone). In a REPEATABLE
// READ or SERIALIZABLE transaction, a lock row changed since tx began
// fails with a serialization failure (40001), returned matching
// backends.ErrUnavailable: run the transaction again. Fence runs no retry
// itself: a failed statement aborts tx.
func (b *Backend) Fence(ctx context.Context, tx pgx.Tx, name string, token events.Token) error {
	if tx == nil {
		return fmt.Errorf("%w: postgres: fence: nil transaction", backends.ErrInvalid)
	}
	if err := validate.Name(name); err != nil {
		return err
	}
	if token == 0 {
		return fmt.Errorf("%w: %q under token 0", backends.ErrNotHeld, name)
	}
	if err := ctx.Err(); err != nil {
		return unavailable(ctx, "fence", err)
	}
	var one int
	err := tx.QueryRow(ctx, b.t.fence, name, int64(token)).Scan(&one)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("%w: %q is no longer held under token %d", backends.ErrNotHeld, name, token)
	case err != nil:
		return unavailable(ctx, "fence", err)
	}
	return nil
}
