package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// nowUS is the server's clock in microseconds since the Unix epoch, read
// from UTC_TIMESTAMP(6): the session's time zone does not move it.
const nowUS = "TIMESTAMPDIFF(MICROSECOND, '1970-01-01', UTC_TIMESTAMP(6))"

// schema is what Migrate runs, in order; every statement is idempotent.
// {p} is the table prefix. Times are microseconds on the server's clock.
//
// sessions: one row per Open; it lives while expires_us is ahead of the
// server's clock, and once passed it is never renewed.
// locks: one row per lock; it names its session; version changes with
// every write (it is the counter's value at the write), so a
// compare-and-swap on it never mistakes a new row for an old one.
// members: the group registry, one row per group and session; ord is
// the counter's value at the first registration.
// counter: the one row whose n gives every token and version, taken
// under its row lock in the writing transaction, so they increase in
// commit order across holders and restarts.
// renew: the keep-alive, one CALL: renews the session unless expired,
// then returns its lock rows (or one row of NULLs) with alive and now.
var schema = []string{
	`CREATE TABLE IF NOT EXISTS {p}sessions (
  id BINARY(32) NOT NULL PRIMARY KEY,
  candidate VARBINARY(1024) NOT NULL,
  ttl_us BIGINT NOT NULL,
  expires_us BIGINT NOT NULL
) ENGINE=InnoDB`,
	`CREATE TABLE IF NOT EXISTS {p}locks (
  name VARBINARY(1024) NOT NULL PRIMARY KEY,
  session_id BINARY(32) NOT NULL,
  candidate VARBINARY(1024) NOT NULL,
  token BIGINT NOT NULL,
  expires_us BIGINT NULL,
  hold BOOLEAN NOT NULL,
  version BIGINT NOT NULL,
  KEY {p}locks_session (session_id)
) ENGINE=InnoDB`,
	`CREATE TABLE IF NOT EXISTS {p}members (
  grp VARBINARY(1024) NOT NULL,
  session_id BINARY(32) NOT NULL,
  ord BIGINT NOT NULL,
  score DOUBLE NOT NULL,
  weight DOUBLE NOT NULL,
  meta BLOB NULL,
  PRIMARY KEY (grp, session_id)
) ENGINE=InnoDB`,
	`CREATE TABLE IF NOT EXISTS {p}counter (
  id TINYINT NOT NULL PRIMARY KEY,
  n BIGINT NOT NULL
) ENGINE=InnoDB`,
	`INSERT IGNORE INTO {p}counter (id, n) VALUES (1, 0)`,
	`DROP PROCEDURE IF EXISTS {p}renew`,
	`CREATE PROCEDURE {p}renew(IN sid BINARY(32))
BEGIN
  UPDATE {p}sessions SET expires_us = {now} + ttl_us WHERE id = sid AND expires_us > {now};
  SELECT EXISTS (SELECT 1 FROM {p}sessions WHERE id = sid AND expires_us > {now}) AS alive, {now} AS now_us,
    l.name, l.token, l.expires_us, l.hold
  FROM (SELECT 1) one LEFT JOIN {p}locks l ON l.session_id = sid;
END`,
}

// expand fills in the prefix and the clock.
func expand(prefix, stmt string) string {
	return strings.NewReplacer("{p}", prefix, "{now}", nowUS).Replace(stmt)
}

// SQL returns the statements Migrate runs for the tables of prefix (see
// WithPrefix; "" for the default), one per element, for a DBA to apply
// by hand; each is idempotent.
func SQL(prefix string) []string {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	out := make([]string, len(schema))
	for i, s := range schema {
		out[i] = expand(prefix, s)
	}
	return out
}

// Migrate creates the backend's tables and its renew procedure in db's
// database if they are missing, with the prefix of opts (only WithPrefix
// applies); a renew procedure of another body (an older version's) is
// replaced. Running it again changes nothing: a procedure already as it
// should be is not dropped, so a process killed while it migrates, or a
// Migrate beside live sessions, never leaves them without one. It needs
// the CREATE, DROP and CREATE ROUTINE privileges.
func Migrate(ctx context.Context, db *sql.DB, opts ...Option) error {
	if db == nil {
		return fmt.Errorf("%w: mysql: nil db", errInvalid)
	}
	c, err := configure(opts)
	if err != nil {
		return err
	}
	stmts := SQL(c.prefix)
	if same, err := renewInPlace(ctx, db, c.prefix, stmts[len(stmts)-1]); err != nil {
		return unavailable(ctx, "migrate", err)
	} else if same {
		stmts = stmts[:len(stmts)-2] // neither DROP nor CREATE the procedure
	}
	for _, stmt := range stmts {
		if err := retry(ctx, "migrate", func() error {
			_, err := db.ExecContext(ctx, stmt)
			var me *mysql.MySQLError
			if errors.As(err, &me) && me.Number == 1304 {
				return nil // a Migrate beside this one created the procedure
			}
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

// renewInPlace reports whether the renew procedure of prefix exists with
// the body that create (its CREATE PROCEDURE statement) gives it.
func renewInPlace(ctx context.Context, db *sql.DB, prefix, create string) (bool, error) {
	var body sql.NullString
	err := db.QueryRowContext(ctx, `SELECT ROUTINE_DEFINITION FROM information_schema.ROUTINES
WHERE ROUTINE_SCHEMA = DATABASE() AND ROUTINE_NAME = ? AND ROUTINE_TYPE = 'PROCEDURE'`, prefix+"renew").Scan(&body)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, err
	}
	_, want, ok := strings.Cut(create, "\nBEGIN")
	return ok && body.Valid && strings.TrimSpace(body.String) == strings.TrimSpace("BEGIN"+want), nil
}
