package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hustings/hustings/backends"
)

// schemaSQL creates what the backend stores in schema %[1]s; every
// statement is idempotent. Times are the server's: expires_at is compared
// with clock_timestamp() only, never with a client's clock.
const schemaSQL = `CREATE SCHEMA IF NOT EXISTS %[1]s;

-- Fencing tokens of every lock, and registration orders: strictly
-- increasing over the life of the database, never reused.
CREATE SEQUENCE IF NOT EXISTS %[1]s.tokens AS bigint NO CYCLE;
CREATE SEQUENCE IF NOT EXISTS %[1]s.orders AS bigint NO CYCLE;

-- One row per session: a candidate's liveness. A session whose
-- expires_at has passed is gone for good (no statement extends it).
CREATE TABLE IF NOT EXISTS %[1]s.sessions (
  id         text        PRIMARY KEY,
  candidate  text        NOT NULL,
  ttl        interval    NOT NULL,
  expires_at timestamptz NOT NULL
);

-- One row while the locks table holds what was written to it: UNLOGGED,
-- as the locks table is, so a crash of the server empties both at once.
-- An acquire finds it missing after a crash and restores it (resetSQL):
-- from then on no lock is taken until every session that was alive at
-- reset_at has expired or renewed since (a renewal reads its locks, finds
-- them gone and ends their terms), or at the latest at free_at, when the
-- last of those sessions expires. It is written with '-infinity' where
-- the locks table is created or converted below, its rows intact.
CREATE UNLOGGED TABLE IF NOT EXISTS %[1]s.epoch (
  one      boolean     PRIMARY KEY DEFAULT true CHECK (one),
  reset_at timestamptz NOT NULL,
  free_at  timestamptz NOT NULL
);

-- The locks released with a hold, logged, so that a crash does not end a
-- hold early: the reset puts the live ones back in the locks table. Each
-- row is a copy of the lock row the release left; rows past their
-- expires_at are deleted a few at a time by later holds.
CREATE TABLE IF NOT EXISTS %[1]s.holds (
  name       text        PRIMARY KEY,
  candidate  text        NOT NULL,
  token      bigint      NOT NULL,
  expires_at timestamptz NOT NULL
);

-- One row per lock name that is or was held, or watched. A row held by a
-- session (NOT hold) is live while its session row is live and its own
-- expires_at, the lease's end ('infinity' without a lease), has not
-- passed: the session's keep-alive renews the session row alone, whatever
-- the number of locks. A row released with a minimum hold (hold) is held
-- by nobody alive until its own expires_at. A released row stays, free
-- (session_id '', expires_at '-infinity'), so that it keeps watched_until.
-- An acquire takes a row over once it is not live. watched_until: until
-- when a Watch of some process wants to hear of the lock's changes;
-- acquires, releases and Closes NOTIFY only while it has not passed.
--
-- The table is UNLOGGED: its writes make no WAL, so an acquire or a
-- release commits without waiting for a WAL flush. A crash of the server
-- (or a failover to a replica) empties it; the epoch table tells acquires
-- so. A locks table that a version before this one made logged becomes
-- UNLOGGED, its rows kept (a rewrite under an ACCESS EXCLUSIVE lock,
-- once), with its live holds copied.
DO $locks$
BEGIN
  IF to_regclass(%[2]s) IS NULL THEN
    CREATE UNLOGGED TABLE %[1]s.locks (
      name       text        PRIMARY KEY,
      session_id text        NOT NULL,
      candidate  text        NOT NULL,
      token      bigint      NOT NULL,
      expires_at timestamptz NOT NULL,
      lease_end  timestamptz,
      hold       boolean     NOT NULL DEFAULT false,
      watched_until timestamptz NOT NULL DEFAULT '-infinity'
    );
  ELSIF (SELECT relpersistence FROM pg_class WHERE oid = to_regclass(%[2]s)) = 'p' THEN
    ALTER TABLE %[1]s.locks SET UNLOGGED;
    INSERT INTO %[1]s.holds (name, candidate, token, expires_at)
      SELECT name, candidate, token, expires_at FROM %[1]s.locks
      WHERE hold AND expires_at > clock_timestamp()
      ON CONFLICT (name) DO NOTHING;
  ELSE
    RETURN;
  END IF;
  INSERT INTO %[1]s.epoch (reset_at, free_at) VALUES ('-infinity', '-infinity')
    ON CONFLICT (one) DO NOTHING;
END
$locks$;
CREATE INDEX IF NOT EXISTS locks_session ON %[1]s.locks (session_id);
-- A locks table of a version before watched_until NOTIFYed every change.
ALTER TABLE %[1]s.locks ADD COLUMN IF NOT EXISTS watched_until timestamptz NOT NULL DEFAULT '-infinity';

-- The registry of group candidates, for the strategies: live while their
-- session is.
CREATE TABLE IF NOT EXISTS %[1]s.members (
  grp        text             NOT NULL,
  session_id text             NOT NULL,
  candidate  text             NOT NULL,
  ord        bigint           NOT NULL,
  score      double precision NOT NULL,
  weight     double precision NOT NULL,
  meta       jsonb,
  PRIMARY KEY (grp, session_id)
);

-- renew_session renews a session and reads the locks it holds: one call,
-- one round trip and one row written, whatever the number of locks. The
-- session row is locked first, and only then judged: an UPDATE judges its
-- WHERE before it waits for a row lock, so it would revive a session that
-- expired while it waited (seen in the chaos suite, beside two CPU
-- burners: a release found the session expired and left its lock, which
-- the revived session then took back under the same token). An acquire
-- that takes a lock over from this session holds this row FOR SHARE while
-- it judges the session dead (see acquireSQL), so the two are ordered:
-- either the take-over judged first, and this call then finds the session
-- expired (nothing revives it), or this call renewed first, and the
-- take-over sees the renewal and takes nothing. The read of the locks is
-- a statement of its own, with a snapshot taken after the renewal (READ
-- COMMITTED), so it sees every take-over that judged before it, and
-- every acquire of this session that committed before the call.
-- alive is false if the session had expired; names and tokens are the
-- session's live locks.
CREATE OR REPLACE FUNCTION %[1]s.renew_session(p_session text,
  OUT alive boolean, OUT names text[], OUT tokens bigint[])
LANGUAGE plpgsql AS $renew$
BEGIN
  PERFORM 1 FROM %[1]s.sessions WHERE id = p_session FOR UPDATE;
  UPDATE %[1]s.sessions s SET expires_at = clock_timestamp() + s.ttl
    WHERE s.id = p_session AND s.expires_at > clock_timestamp();
  alive := FOUND;
  IF NOT alive THEN
    RETURN;
  END IF;
  SELECT COALESCE(array_agg(l.name), '{}'), COALESCE(array_agg(l.token), '{}')
    INTO names, tokens FROM %[1]s.locks l
    WHERE l.session_id = p_session AND NOT l.hold AND l.expires_at > clock_timestamp();
END
$renew$;

-- keep_alive was the keep-alive of the backend's versions that judged a
-- lock by its row's expires_at alone, renewing every row each time. Such
-- a process beside this version would take a live lock one TTL after its
-- acquire: it refuses now, and its return type differs, so that such a
-- version's Migrate fails too (it cannot CREATE OR REPLACE it).
DROP FUNCTION IF EXISTS %[1]s.keep_alive(text);
CREATE FUNCTION %[1]s.keep_alive(p_session text) RETURNS void
LANGUAGE plpgsql AS $refuse$
BEGIN
  RAISE EXCEPTION 'hustings: this schema was migrated by a newer version of the postgres backend, which judges locks by their session: upgrade this process'
    USING ERRCODE = '55000';
END
$refuse$;
`

// SQL returns the statements Migrate runs for schema (DefaultSchema if
// ""), for a DBA to review or apply by hand. Running them again changes
// nothing.
func SQL(schema string) string {
	if schema == "" {
		schema = DefaultSchema
	}
	return fmt.Sprintf(schemaSQL, pgx.Identifier{schema}.Sanitize(), literal(pgx.Identifier{schema, "locks"}.Sanitize()))
}

// literal quotes s as an SQL string literal.
func literal(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// Migrate creates the schema, tables, sequences and functions the backend
// uses, where they do not exist yet: the statements SQL returns, in one
// transaction. It is idempotent; New never calls it. Options other than
// WithSchema do not apply to it and are ErrInvalid.
func Migrate(ctx context.Context, pool *pgxpool.Pool, opts ...Option) error {
	if pool == nil {
		return fmt.Errorf("%w: postgres: nil pool", backends.ErrInvalid)
	}
	cfg, err := configure(opts)
	if err != nil {
		return err
	}
	if cfg.listen != nil {
		return fmt.Errorf("%w: postgres: WithListener does not apply to Migrate", backends.ErrInvalid)
	}
	// Most calls find everything in place (every process that dials runs
	// Migrate): a read of the catalogs says so without DDL. The DDL is not
	// harmless on a live schema: CREATE INDEX IF NOT EXISTS takes a SHARE
	// lock on the locks table before it looks for the index, queued behind
	// every statement in flight, and every write queues behind it until
	// the transaction commits, a round trip of the migrating client later
	// (seen in the chaos suite beside two CPU burners: a node that started
	// stalled every keep-alive for 2 s, and every session was lost).
	current, err := migrated(ctx, pool, cfg.schema)
	if err != nil {
		return unavailable(ctx, "migrate", err)
	}
	if current {
		return nil
	}
	// Concurrent CREATE ... IF NOT EXISTS can still collide on the
	// catalogs; a transaction-scoped advisory lock keeps two Migrates
	// apart (it ends with the transaction: no session state is left).
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext($1))", "hustings migrate "+cfg.schema); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, SQL(cfg.schema))
		return err
	})
	if err != nil {
		return unavailable(ctx, "migrate", err)
	}
	return nil
}

// migratedSQL reports whether every table, sequence and index of a schema
// exists, the locks table is UNLOGGED with its column watched_until, and its functions renew_session and keep_alive have the bodies
// SQL gives them.
const migratedSQL = `SELECT to_regclass($1 || '.sessions') IS NOT NULL
  AND to_regclass($1 || '.locks') IS NOT NULL
  AND to_regclass($1 || '.members') IS NOT NULL
  AND to_regclass($1 || '.tokens') IS NOT NULL
  AND to_regclass($1 || '.orders') IS NOT NULL
  AND to_regclass($1 || '.locks_session') IS NOT NULL
  AND to_regclass($1 || '.epoch') IS NOT NULL
  AND to_regclass($1 || '.holds') IS NOT NULL
  AND (SELECT relpersistence FROM pg_class WHERE oid = to_regclass($1 || '.locks')) = 'u'
  AND EXISTS (SELECT 1 FROM pg_attribute
    WHERE attrelid = to_regclass($1 || '.locks') AND attname = 'watched_until' AND NOT attisdropped)
  AND EXISTS (SELECT 1 FROM pg_proc
    WHERE oid = to_regprocedure($1 || '.renew_session(text)') AND prosrc = $2)
  AND EXISTS (SELECT 1 FROM pg_proc
    WHERE oid = to_regprocedure($1 || '.keep_alive(text)') AND prosrc = $3)`

// migrated reports whether schema is as Migrate would leave it: one read
// of the catalogs, which takes no lock a statement of the backend waits
// for.
func migrated(ctx context.Context, pool *pgxpool.Pool, schema string) (bool, error) {
	sql := SQL(schema)
	var ok bool
	err := pool.QueryRow(ctx, migratedSQL, pgx.Identifier{schema}.Sanitize(), body(sql, "$renew$"), body(sql, "$refuse$")).Scan(&ok)
	return ok, err
}

// body returns the text between the first two occurrences of the dollar
// quote tag in sql: a function's body, as pg_proc.prosrc holds it.
func body(sql, tag string) string {
	_, b, _ := strings.Cut(sql, tag)
	b, _, _ = strings.Cut(b, tag)
	return b
}

// tables holds the schema-qualified names the statements use, and the
// statements of every acquire and release, expanded once: expanding one
// took a quarter of the client's CPU in a loop of runs.
type tables struct {
	sessions, locks, members, tokens, orders, renew, epoch, holds string
	channel                                                       string // NOTIFY channel of lock changes
	acquire, free, hold, mark, refresh, fence                     string // acquireSQL, freeSQL, holdSQL, markSQL, refreshSQL and fenceSQL, expanded by New
}

func newTables(schema string) tables {
	q := pgx.Identifier{schema}.Sanitize() + "."
	return tables{
		sessions: q + "sessions",
		locks:    q + "locks",
		members:  q + "members",
		tokens:   q + "tokens",
		orders:   q + "orders",
		renew:    q + "renew_session",
		epoch:    q + "epoch",
		holds:    q + "holds",
		channel:  "hustings." + schema,
	}
}

// expand replaces {sessions}, {locks}, ... in a statement.
func (t tables) expand(stmt string) string {
	return strings.NewReplacer(
		"{sessions}", t.sessions, "{locks}", t.locks, "{members}", t.members,
		"{tokens}", t.tokens, "{orders}", t.orders, "{renew_session}", t.renew,
		"{epoch}", t.epoch, "{holds}", t.holds,
	).Replace(stmt)
}
