package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/validate"
)

// fenceSQL reads the token of a live lock row held by a live session,
// locking the lock row (and the session row) in share mode: a take-over
// or a release, which writes the lock row, waits for the transaction.
const fenceSQL = `SELECT l.token FROM {p}locks l JOIN {p}sessions s ON s.id = l.session_id
WHERE l.name = ? AND NOT l.hold AND (l.expires_us IS NULL OR l.expires_us > {now}) AND s.expires_us > {now}
LOCK IN SHARE MODE`

// Fence checks, inside the caller's transaction tx on the backend's
// database, that name is held under token now, and keeps it so until tx
// ends: it locks the lock row in share mode (LOCK IN SHARE MODE, MySQL
// 8's FOR SHARE), so no other candidate can take the lock or its holder
// release it before tx commits or rolls back. Write to the protected
// tables in tx after Fence returns nil. A stale token, a free or expired
// lock, or a hold is refused with an error matching backends.ErrNotHeld;
// the caller then rolls tx back. Other errors match ErrUnavailable or
// ErrInvalid; they are not retried (tx may be spoiled).
func (b *Backend) Fence(ctx context.Context, tx *sql.Tx, name string, token events.Token) error {
	if tx == nil {
		return fmt.Errorf("%w: mysql: nil transaction", backends.ErrInvalid)
	}
	if err := validate.Name(name); err != nil {
		return err
	}
	var cur int64
	err := tx.QueryRowContext(ctx, b.d.sql(fenceSQL), name).Scan(&cur)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("%w: mysql: fence: %q is not held", backends.ErrNotHeld, name)
	case err != nil:
		return unavailable(ctx, "fence", err)
	case events.Token(cur) != token:
		return fmt.Errorf("%w: mysql: fence: %q is held under token %d, not %d", backends.ErrNotHeld, name, cur, token)
	}
	return nil
}
