package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/validate"
)

// freeSQL frees the lock row (an empty session_id, expires_at
// '-infinity'; the row stays, with its watched_until) if this session
// holds it under the token, and NOTIFYs it if the row is watched. A row
// of the session's that is no longer live (its lease ended, or the
// session expired) is freed all the same: left, a keep-alive or an
// acquire of the session that judged it alive (a statement's snapshot and
// clock are not taken at one instant) would give the session its token
// back for a new term, as the chaos suite saw. Whether the row is watched
// is read from the version the UPDATE wrote, after its row lock: a Watch
// that marked the row before is seen, and one that marks it after finds
// the lock free (see Watch). It is a statement of its own, not holdSQL's
// with a branch per case: the branch not taken, planned and run as a
// one-time filter in every release, cost about as much again as the
// UPDATE.
//
// $1 name, $2 session ID, $3 token, $4 channel. Returns the number of
// locks released (0 or 1), of NOTIFYs sent, and whether the session
// lives.
const freeSQL = `WITH d AS (
  UPDATE {locks} SET session_id = '', candidate = '', expires_at = '-infinity', lease_end = NULL
  WHERE name = $1 AND session_id = $2 AND token = $3 AND NOT hold
  RETURNING name, watched_until
), w AS MATERIALIZED (
  SELECT name FROM d WHERE watched_until > clock_timestamp()
)
SELECT (SELECT count(*) FROM d),
  (SELECT count(*) FROM w, pg_notify($4::text, '0 ' || w.name) n),
  EXISTS (SELECT 1 FROM {sessions} WHERE id = $2 AND expires_at > clock_timestamp())`

// holdSQL marks the lock row held by nobody alive for the hold, if this
// session holds it under the token and it is live, and NOTIFYs it if the
// row is watched (as freeSQL). A hold is set only on a live row: the
// session seen alive in the statement's snapshot is alive now (see
// acquireSQL), and a take-over that judged it dead has changed the row,
// which the UPDATE then finds (it judges the latest version of a row
// changed while it waited). A hold is also copied to the holds table,
// which is logged, so that a crash of the server does not end it early
// (the only release whose commit waits for a WAL flush).
//
// $1 name, $2 session ID, $3 token, $4 hold ms (> 0), $5 channel.
// Returns the number of locks released (0 or 1), of NOTIFYs sent, and
// whether the session lives.
const holdSQL = `WITH h AS (
  UPDATE {locks} SET hold = true, lease_end = NULL, expires_at = clock_timestamp() + $4::bigint * interval '1 millisecond'
  WHERE name = $1 AND session_id = $2 AND token = $3 AND NOT hold AND expires_at > clock_timestamp()
    AND EXISTS (SELECT 1 FROM {sessions} WHERE id = $2 AND expires_at > clock_timestamp())
  RETURNING name, candidate, token, expires_at, watched_until
), kept AS (
  INSERT INTO {holds} (name, candidate, token, expires_at)
  SELECT name, candidate, token, expires_at FROM h
  ON CONFLICT (name) DO UPDATE SET candidate = excluded.candidate, token = excluded.token, expires_at = excluded.expires_at
), gc AS (
  DELETE FROM {holds} WHERE name IN (
    SELECT name FROM {holds} WHERE expires_at < clock_timestamp() - interval '1 minute' AND EXISTS (SELECT 1 FROM h)
    LIMIT 8 FOR UPDATE SKIP LOCKED)
), w AS MATERIALIZED (
  SELECT name FROM h WHERE watched_until > clock_timestamp()
)
SELECT (SELECT count(*) FROM h),
  (SELECT count(*) FROM w, pg_notify($5::text, $4::bigint::text || ' ' || w.name) n),
  EXISTS (SELECT 1 FROM {sessions} WHERE id = $2 AND expires_at > clock_timestamp())`

// Release frees name, or marks it held by nobody alive for hold, if this
// session holds it under token: one statement (freeSQL or holdSQL), one
// round trip, which NOTIFYs only if the lock is watched. Whatever its
// outcome, the session claims name under token no more: KeepAlive
// stops confirming it, and Lost stops reporting it.
func (s *session) Release(ctx context.Context, name string, token events.Token, hold time.Duration) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := validate.Release(name, hold); err != nil {
		return err
	}
	s.ledger.Released(name, token)
	var (
		n, told int64
		alive   bool
	)
	err := s.b.run(ctx, "release", func() error {
		if hold <= 0 {
			return s.b.pool.QueryRow(ctx, s.b.t.free, name, s.sid, int64(token), s.b.t.channel).
				Scan(&n, &told, &alive)
		}
		return s.b.pool.QueryRow(ctx, s.b.t.hold, name, s.sid, int64(token), ms(hold), s.b.t.channel).
			Scan(&n, &told, &alive)
	})
	switch {
	case err != nil:
		return err
	case n == 1:
		return nil
	case !alive:
		return fmt.Errorf("%w: %q: %w", backends.ErrNotHeld, name, s.lost())
	}
	return fmt.Errorf("%w: %q under token %d by this session of %s", backends.ErrNotHeld, name, token, s.id)
}
