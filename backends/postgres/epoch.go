package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// resetSQL restores the epoch row that a crash of the server removed
// with the rest of the UNLOGGED tables (see the epoch table in SQL), in
// one transaction with an advisory lock that keeps two resets apart, so
// that a later one finds the row and does nothing:
//
//   - The tokens sequence moves to the server's clock in microseconds
//     if it is behind it. Values an acquire took from it since its last
//     WAL flush may not have survived the crash (an acquire writes no
//     other WAL, so its commit does not flush), and the sequence may
//     come back below tokens already handed out; the clock is above all
//     of them as long as fewer than a million locks a second were taken
//     on average and the clock did not step back.
//   - The holds that are still running go back into the locks table,
//     over the free rows that Watch may have inserted since the crash (no
//     lock can have been taken before the epoch row is back).
//   - The epoch row is written, so acquires go on once every session
//     alive now has renewed or expired (free_at: the latest expiry).
//
// The setval is a statement of its own: its $1 is the sequence's name.
const setvalSQL = `SELECT setval($1::regclass, GREATEST(
  (SELECT last_value FROM {tokens}), (extract(epoch FROM clock_timestamp()) * 1000000)::bigint))`

const resetSQL = `INSERT INTO {locks} AS l (name, session_id, candidate, token, expires_at, lease_end, hold)
  SELECT name, '', candidate, token, expires_at, NULL, true FROM {holds}
  WHERE expires_at > clock_timestamp()
  ON CONFLICT (name) DO UPDATE SET session_id = '', candidate = excluded.candidate, token = excluded.token,
    expires_at = excluded.expires_at, lease_end = NULL, hold = true
  WHERE l.expires_at <= clock_timestamp();
INSERT INTO {epoch} (reset_at, free_at)
  SELECT clock_timestamp(), GREATEST(clock_timestamp(), (SELECT max(expires_at) FROM {sessions}))
  ON CONFLICT (one) DO NOTHING;`

// resetEpoch restores the epoch row if it is missing: once per crash of
// the server, by the first acquire that finds it so.
func (b *Backend) resetEpoch(ctx context.Context) error {
	return b.run(ctx, "restore the epoch", func() error {
		return pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext($1))", "hustings epoch "+b.t.epoch); err != nil {
				return err
			}
			var there bool
			if err := tx.QueryRow(ctx, b.t.expand("SELECT EXISTS (SELECT 1 FROM {epoch})")).Scan(&there); err != nil || there {
				return err
			}
			if _, err := tx.Exec(ctx, b.t.expand(setvalSQL), b.t.tokens); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, b.t.expand(resetSQL))
			return err
		})
	})
}
