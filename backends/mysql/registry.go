package mysql

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"

	"github.com/hustings/hustings/strategy"
)

// registerSQL stores the entry if the session lives, keeping the order of
// its first registration; $n is the counter value taken for it.
const registerSQL = `INSERT INTO {p}members (grp, session_id, ord, score, weight, meta)
SELECT ?, s.id, ?, ?, ?, ? FROM {p}sessions s WHERE s.id = ? AND s.expires_us > {now}
ON DUPLICATE KEY UPDATE score = VALUES(score), weight = VALUES(weight), meta = VALUES(meta)`

// orderSQL reads the order of a live session's entry.
const orderSQL = `SELECT m.ord FROM {p}members m JOIN {p}sessions s ON s.id = m.session_id
WHERE m.grp = ? AND m.session_id = ? AND s.expires_us > {now}`

// Register stores the entry in a transaction that takes the next counter
// value (used only by a first registration) and reads the order back.
func (d *driver) Register(ctx context.Context, group, sid string, c strategy.Candidate) (uint64, bool, error) {
	var meta []byte
	if c.Meta != nil {
		meta, _ = json.Marshal(c.Meta) // a map of strings always encodes
	}
	var (
		order int64
		alive bool
	)
	err := retry(ctx, "register", func() error {
		tx, err := d.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback() }()
		n, err := d.next(ctx, tx)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, d.sql(registerSQL), group, n, c.Score, c.Weight, meta, sid); err != nil {
			return err
		}
		err = tx.QueryRowContext(ctx, d.sql(orderSQL), group, sid).Scan(&order)
		if alive = err == nil; errors.Is(err, sql.ErrNoRows) {
			err = nil
		}
		if err != nil {
			return err
		}
		return tx.Commit()
	})
	return uint64(order), alive, err
}

// Deregister deletes the entry: one statement.
func (d *driver) Deregister(ctx context.Context, group, sid string) error {
	return retry(ctx, "deregister", func() error {
		_, err := d.db.ExecContext(ctx, d.sql(`DELETE FROM {p}members WHERE grp = ? AND session_id = ?`), group, sid)
		return err
	})
}

// membersSQL lists the entries of live sessions in order.
const membersSQL = `SELECT s.candidate, m.ord, m.score, m.weight, m.meta FROM {p}members m
JOIN {p}sessions s ON s.id = m.session_id
WHERE m.grp = ? AND s.expires_us > {now} ORDER BY m.ord`

// Members lists the entries of group whose sessions live: one SELECT.
func (d *driver) Members(ctx context.Context, group string) ([]strategy.Candidate, error) {
	var out []strategy.Candidate
	err := retry(ctx, "members", func() error {
		out = nil
		rows, err := d.db.QueryContext(ctx, d.sql(membersSQL), group)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				c     strategy.Candidate
				order int64
				meta  []byte
			)
			if err := rows.Scan(&c.ID, &order, &c.Score, &c.Weight, &meta); err != nil {
				return err
			}
			c.Order = uint64(order)
			if meta != nil {
				if err := json.Unmarshal(meta, &c.Meta); err != nil {
					return err
				}
			}
			out = append(out, c)
		}
		return rows.Err()
	})
	return out, err
}
