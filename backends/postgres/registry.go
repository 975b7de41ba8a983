package postgres

import (
	"context"
	"errors"
	"maps"

	"github.com/jackc/pgx/v5"

	"github.com/hustings/hustings/internal/validate"
	"github.com/hustings/hustings/strategy"
)

// membersSQL lists the live entries of group $1 in registration order,
// and deletes those whose session expired or is gone.
const membersSQL = `WITH dead AS (
  DELETE FROM {members} m WHERE m.grp = $1 AND NOT EXISTS (
    SELECT 1 FROM {sessions} s WHERE s.id = m.session_id AND s.expires_at > clock_timestamp())
  RETURNING m.session_id
)
SELECT m.candidate, m.ord, m.score, m.weight, m.meta FROM {members} m
JOIN {sessions} s ON s.id = m.session_id
WHERE m.grp = $1 AND s.expires_at > clock_timestamp()
ORDER BY m.ord`

// Members lists the candidates registered in group whose sessions live,
// in registration order: one statement, which also deletes the entries of
// sessions that are gone.
func (b *Backend) Members(ctx context.Context, group string) ([]strategy.Candidate, error) {
	if err := validate.Name(group); err != nil {
		return nil, err
	}
	var out []strategy.Candidate
	err := b.run(ctx, "members", func() error {
		out = nil
		rows, err := b.pool.Query(ctx, b.t.expand(membersSQL), group)
		if err != nil {
			return err
		}
		for rows.Next() {
			var c strategy.Candidate
			var order int64
			if err := rows.Scan(&c.ID, &order, &c.Score, &c.Weight, &c.Meta); err != nil {
				rows.Close()
				return err
			}
			c.Order = uint64(order)
			out = append(out, c)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// registerSQL stores the session's entry in group $2, keeping the order
// of its first registration, if the session lives.
const registerSQL = `INSERT INTO {members} AS m (grp, session_id, candidate, ord, score, weight, meta)
SELECT $2, s.id, s.candidate, nextval('{orders}'), $3, $4, $5
FROM {sessions} s WHERE s.id = $1 AND s.expires_at > clock_timestamp()
ON CONFLICT (grp, session_id) DO UPDATE SET
  score = excluded.score, weight = excluded.weight, meta = excluded.meta
RETURNING m.ord`

// Register adds or updates the session's entry in group: one INSERT ...
// ON CONFLICT DO UPDATE. The order is assigned at the first registration
// and kept on updates. If the session row expired, it stores nothing and
// reports backends.ErrSessionLost.
func (s *session) Register(ctx context.Context, group string, c strategy.Candidate) (strategy.Candidate, error) {
	if err := s.usable(); err != nil {
		return strategy.Candidate{}, err
	}
	if err := validate.Candidate(group, c); err != nil {
		return strategy.Candidate{}, err
	}
	var order int64
	found := true
	err := s.b.run(ctx, "register", func() error {
		err := s.b.pool.QueryRow(ctx, s.b.t.expand(registerSQL), s.sid, group, c.Score, c.Weight, c.Meta).Scan(&order)
		if errors.Is(err, pgx.ErrNoRows) {
			found = false
			return nil
		}
		return err
	})
	if err != nil {
		return strategy.Candidate{}, err
	}
	if !found {
		return strategy.Candidate{}, s.lost()
	}
	c.ID, c.Order = s.id, uint64(order)
	if c.Meta != nil {
		c.Meta = maps.Clone(c.Meta)
	}
	return c, nil
}

// Deregister deletes the session's entry from group: one DELETE, which
// does nothing if there is no entry.
func (s *session) Deregister(ctx context.Context, group string) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := validate.Name(group); err != nil {
		return err
	}
	return s.b.run(ctx, "deregister", func() error {
		_, err := s.b.pool.Exec(ctx, s.b.t.expand(`DELETE FROM {members} WHERE grp = $1 AND session_id = $2`), group, s.sid)
		return err
	})
}
