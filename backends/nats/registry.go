package nats

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/internal/validate"
	"github.com/hustings/hustings/strategy"
)

// Members lists the candidates registered in group whose sessions live,
// in registration order: one multi-key get of the group's entries
// (member.<group>.<session ID>, at most 1,024), one of their sessions'
// records, and for each session found gone a read of it by the stream's
// leader and a removal of its entry.
func (b *Backend) Members(ctx context.Context, group string) ([]strategy.Candidate, error) {
	if err := validate.Name(group); err != nil {
		return nil, err
	}
	if err := b.ready(ctx, "members"); err != nil {
		return nil, err
	}
	prefix := memberPrefix + keyOf(group) + "."
	entries, err := b.b.getMany(ctx, []string{prefix + "*"})
	if err != nil {
		return nil, b.failed(ctx, "members", err)
	}
	sessions := make([]string, 0, len(entries))
	for key, e := range entries {
		if e.live {
			sessions = append(sessions, sessionPrefix+strings.TrimPrefix(key, prefix))
		}
	}
	alive, err := b.b.getMany(ctx, sessions)
	if err != nil {
		return nil, b.failed(ctx, "members", err)
	}
	var out []strategy.Candidate
	for _, key := range slices.Sorted(maps.Keys(entries)) {
		e := entries[key]
		var r memberRecord
		if !e.live || json.Unmarshal(e.value, &r) != nil {
			continue
		}
		if sk := sessionPrefix + strings.TrimPrefix(key, prefix); !alive[sk].live {
			// Gone as a replica said; the leader may have its last write.
			se, err := b.b.getLeader(ctx, sk)
			if err != nil {
				return nil, b.failed(ctx, "members", err)
			}
			if !se.live {
				_ = b.b.remove(ctx, key, e.rev) // a session record never comes back
				continue
			}
		}
		out = append(out, strategy.Candidate{ID: r.ID, Order: order(r, e.rev), Score: r.Score, Weight: r.Weight, Meta: r.Meta})
	}
	slices.SortFunc(out, func(x, y strategy.Candidate) int { return cmp.Compare(x.Order, y.Order) })
	return out, nil
}

// order is an entry's registration order: the revision of its first
// write, which later writes carry.
func order(r memberRecord, rev uint64) uint64 {
	if r.Order == 0 {
		return rev
	}
	return r.Order
}

// Register stores the session's entry in group, keeping the order of its
// first registration: it reads the entry and the session record in one
// request, then writes the entry conditioned on the revision read.
func (s *session) Register(ctx context.Context, group string, c strategy.Candidate) (strategy.Candidate, error) {
	if err := validate.Candidate(group, c); err != nil {
		return strategy.Candidate{}, err
	}
	if err := s.check(ctx, "register"); err != nil {
		return strategy.Candidate{}, err
	}
	s.mu.Lock()
	if s.groups == nil {
		s.groups = map[string]bool{}
	}
	s.groups[group] = true
	s.mu.Unlock()
	key := memberPrefix + keyOf(group) + "." + s.sid
	for range 3 {
		e, alive, err := s.read(ctx, key)
		if err != nil {
			return strategy.Candidate{}, s.b.failed(ctx, "register", err)
		}
		if !alive {
			return strategy.Candidate{}, fmt.Errorf("%w: nats: register in %q", backends.ErrSessionLost, group)
		}
		r := memberRecord{ID: s.id, Score: c.Score, Weight: c.Weight, Meta: c.Meta}
		var old memberRecord
		if e.live && json.Unmarshal(e.value, &old) == nil {
			r.Order = order(old, e.rev)
		}
		rev, err := s.b.b.write(ctx, key, encode(r), e.rev, 0)
		if errors.Is(err, errChanged) {
			continue
		}
		if err != nil {
			return strategy.Candidate{}, s.b.failed(ctx, "register", err)
		}
		return strategy.Candidate{ID: s.id, Order: order(r, rev), Score: c.Score, Weight: c.Weight, Meta: c.Meta}, nil
	}
	return strategy.Candidate{}, fmt.Errorf("%w: nats: register in %q: the entry keeps changing", backends.ErrUnavailable, group)
}

// Deregister removes the session's entry from group: one removal.
func (s *session) Deregister(ctx context.Context, group string) error {
	if err := validate.Name(group); err != nil {
		return err
	}
	if err := s.check(ctx, "deregister"); err != nil {
		return err
	}
	if err := s.b.b.remove(ctx, memberPrefix+keyOf(group)+"."+s.sid, 0); err != nil {
		return s.b.failed(ctx, "deregister", err)
	}
	return nil
}
