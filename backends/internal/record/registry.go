package record

import (
	"context"
	"maps"

	"github.com/hustings/hustings/internal/validate"
	"github.com/hustings/hustings/strategy"
)

// Members lists the live candidates registered in group, in registration
// order.
func (s *Store) Members(ctx context.Context, group string) ([]strategy.Candidate, error) {
	if err := validate.Name(group); err != nil {
		return nil, err
	}
	var out []strategy.Candidate
	err := s.call(ctx, "members", func() (err error) {
		out, err = s.d.Members(ctx, group)
		return err
	})
	return out, err
}

// Register adds or updates the session's entry in group; see
// backends.Session.Register. A session that expired stores nothing and reports
// ErrSessionLost.
func (ss *session) Register(ctx context.Context, group string, c strategy.Candidate) (strategy.Candidate, error) {
	if err := ss.usable(); err != nil {
		return strategy.Candidate{}, err
	}
	if err := validate.Candidate(group, c); err != nil {
		return strategy.Candidate{}, err
	}
	r := ss.s.d
	var (
		order uint64
		alive bool
	)
	err := ss.s.call(ctx, "register", func() (err error) {
		order, alive, err = r.Register(ctx, group, ss.sid, c)
		return err
	})
	switch {
	case err != nil:
		return strategy.Candidate{}, err
	case !alive:
		return strategy.Candidate{}, ss.lost()
	}
	c.ID, c.Order = ss.id, order
	if c.Meta != nil {
		c.Meta = maps.Clone(c.Meta)
	}
	return c, nil
}

// Deregister removes the session's entry from group; no entry is not an
// error.
func (ss *session) Deregister(ctx context.Context, group string) error {
	if err := ss.usable(); err != nil {
		return err
	}
	if err := validate.Name(group); err != nil {
		return err
	}
	return ss.s.call(ctx, "deregister", func() error { return ss.s.d.Deregister(ctx, group, ss.sid) })
}
