package mysql

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/hustings/hustings/backends/internal/record"
	"github.com/hustings/hustings/events"
)

// driver is the record.Driver of the backend: one or a few statements per
// record operation, on the server's clock.
type driver struct {
	db     *sql.DB
	prefix string
}

func (d *driver) sql(stmt string) string { return expand(d.prefix, stmt) }

func us(t time.Time) int64 { return t.UnixMicro() }

const createSessionSQL = `INSERT INTO {p}sessions (id, candidate, ttl_us, expires_us) VALUES (?, ?, ?, {now} + ?)`

// CreateSession inserts the session row: one statement. The row keeps
// no version (Renew judges it by its expiry).
func (d *driver) CreateSession(ctx context.Context, s record.Session) (uint64, error) {
	ttl := s.TTL.Microseconds()
	return 0, retry(ctx, "open", func() error {
		_, err := d.db.ExecContext(ctx, d.sql(createSessionSQL), s.ID, s.Candidate, ttl, ttl)
		return err
	})
}

// Renew calls the renew procedure: one statement (one round trip, one
// row written) whatever the number of locks; the server reads the
// session's lock rows through their index (held is not needed).
func (d *driver) Renew(ctx context.Context, s record.Session, _ []record.Lock) (record.Renewal, error) {
	var (
		alive bool
		locks []record.Lock
		now   time.Time
	)
	sid := s.ID
	err := retry(ctx, "keep-alive", func() error {
		alive, locks = false, nil
		rows, err := d.db.QueryContext(ctx, d.sql("CALL {p}renew(?)"), sid)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				nowUS   int64
				name    sql.NullString
				token   sql.NullInt64
				expires sql.NullInt64
				hold    sql.NullBool
			)
			if err := rows.Scan(&alive, &nowUS, &name, &token, &expires, &hold); err != nil {
				return err
			}
			now = time.UnixMicro(nowUS)
			if name.Valid {
				l := record.Lock{Name: name.String, Session: sid, Token: events.Token(token.Int64), Hold: hold.Bool}
				if expires.Valid {
					l.Expires = time.UnixMicro(expires.Int64)
				}
				locks = append(locks, l)
			}
		}
		return rows.Err()
	})
	return record.Renewal{Alive: alive, Locks: locks, Now: now}, err
}

// DeleteSession deletes the session's lock rows (but holds), its
// registry entries and its row (with rows of sessions that expired a
// minute ago or more, which nothing renews): three statements.
func (d *driver) DeleteSession(ctx context.Context, s record.Session, held []record.Lock) ([]string, error) {
	sid := s.ID
	names := make([]string, len(held))
	for i, l := range held {
		names[i] = l.Name
	}
	err := retry(ctx, "close", func() error {
		if _, err := d.db.ExecContext(ctx, d.sql(`DELETE FROM {p}locks WHERE session_id = ? AND NOT hold`), sid); err != nil {
			return err
		}
		if _, err := d.db.ExecContext(ctx, d.sql(`DELETE FROM {p}members WHERE session_id = ?`), sid); err != nil {
			return err
		}
		_, err := d.db.ExecContext(ctx, d.sql(`DELETE FROM {p}sessions WHERE id = ? OR expires_us < {now} - 60000000`), sid)
		return err
	})
	return names, err
}

// readLockSQL reads a lock row, its holder's expiry, the reader's and the
// clock, in one row whether or not the lock row exists.
const readLockSQL = `SELECT l.session_id, l.candidate, l.token, l.expires_us, l.hold, l.version,
  h.expires_us, (SELECT expires_us FROM {p}sessions WHERE id = ?), {now}
FROM (SELECT 1) one LEFT JOIN {p}locks l ON l.name = ? LEFT JOIN {p}sessions h ON h.id = l.session_id`

// ReadLock reads the lock row and the sessions it concerns: one SELECT.
func (d *driver) ReadLock(ctx context.Context, name, self string) (record.View, error) {
	var v record.View
	err := retry(ctx, "read", func() error {
		var (
			sid, cand          sql.NullString
			token, exp, ver    sql.NullInt64
			hold               sql.NullBool
			holderExp, selfExp sql.NullInt64
			nowUS              int64
		)
		err := d.db.QueryRowContext(ctx, d.sql(readLockSQL), self, name).
			Scan(&sid, &cand, &token, &exp, &hold, &ver, &holderExp, &selfExp, &nowUS)
		if err != nil {
			return err
		}
		v = record.View{Now: time.UnixMicro(nowUS)}
		if ver.Valid {
			v.Lock = record.Lock{Name: name, Session: sid.String, Candidate: cand.String,
				Token: events.Token(token.Int64), Hold: hold.Bool, Version: uint64(ver.Int64)}
			if exp.Valid {
				v.Lock.Expires = time.UnixMicro(exp.Int64)
			}
		}
		if holderExp.Valid && holderExp.Int64 > nowUS {
			v.HolderAlive, v.HolderExpires = true, time.UnixMicro(holderExp.Int64)
		}
		v.SelfAlive = selfExp.Valid && selfExp.Int64 > nowUS
		return nil
	})
	return v, err
}

// CreateLock inserts the lock row in a transaction that takes the next
// counter value first (see schema).
func (d *driver) CreateLock(ctx context.Context, l record.Lock) (record.Lock, error) {
	return d.write(ctx, l, func(tx *sql.Tx, n int64) error {
		_, err := tx.ExecContext(ctx, d.sql(`INSERT INTO {p}locks (name, session_id, candidate, token, expires_us, hold, version)
VALUES (?, ?, ?, ?, ?, ?, ?)`), l.Name, l.Session, l.Candidate, tokenOr(l.Token, n), expiresOf(l), l.Hold, n)
		var me *mysql.MySQLError
		if errors.As(err, &me) && me.Number == 1062 {
			return record.ErrConflict
		}
		return err
	})
}

// SwapLock updates the lock row at version in a transaction that takes
// the next counter value first.
func (d *driver) SwapLock(ctx context.Context, l record.Lock, version uint64) (record.Lock, error) {
	return d.write(ctx, l, func(tx *sql.Tx, n int64) error {
		res, err := tx.ExecContext(ctx, d.sql(`UPDATE {p}locks SET session_id = ?, candidate = ?, token = ?, expires_us = ?, hold = ?, version = ?
WHERE name = ? AND version = ?`), l.Session, l.Candidate, tokenOr(l.Token, n), expiresOf(l), l.Hold, n, l.Name, int64(version))
		if err != nil {
			return err
		}
		if k, err := res.RowsAffected(); err != nil || k == 0 {
			return errors.Join(record.ErrConflict, err)
		}
		return nil
	})
}

// write runs change in a transaction after taking the next counter value
// under its row lock, and returns l as written.
func (d *driver) write(ctx context.Context, l record.Lock, change func(tx *sql.Tx, n int64) error) (record.Lock, error) {
	var n int64
	err := retry(ctx, "write", func() error {
		tx, err := d.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback() }()
		if n, err = d.next(ctx, tx); err != nil {
			return err
		}
		if err := change(tx, n); err != nil {
			return err
		}
		return tx.Commit()
	})
	if err != nil {
		return record.Lock{}, err
	}
	l.Token, l.Version = events.Token(tokenOr(l.Token, n)), uint64(n)
	return l, nil
}

// next takes the counter's next value in tx, which then holds the
// counter's row lock until it ends (see schema).
func (d *driver) next(ctx context.Context, tx *sql.Tx) (int64, error) {
	res, err := tx.ExecContext(ctx, d.sql(`UPDATE {p}counter SET n = LAST_INSERT_ID(n + 1) WHERE id = 1`))
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

// DeleteLock deletes the lock row at version: one statement.
func (d *driver) DeleteLock(ctx context.Context, name string, version uint64) error {
	return retry(ctx, "delete", func() error {
		res, err := d.db.ExecContext(ctx, d.sql(`DELETE FROM {p}locks WHERE name = ? AND version = ?`), name, int64(version))
		if err != nil {
			return err
		}
		if k, err := res.RowsAffected(); err != nil || k == 0 {
			return errors.Join(record.ErrConflict, err)
		}
		return nil
	})
}

func tokenOr(t events.Token, n int64) int64 {
	if t == 0 {
		return n
	}
	return int64(t)
}

func expiresOf(l record.Lock) sql.NullInt64 {
	if l.Expires.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: us(l.Expires), Valid: true}
}
