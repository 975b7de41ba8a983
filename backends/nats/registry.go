package nats

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hustings/hustings/backends/internal/record"
	"github.com/hustings/hustings/strategy"
)

// Register writes session sid's entry in group, keeping the order of its
// first write: it reads the entry (from the stream's leader) beside the
// session record, then writes the entry on the revision read.
func (b *bucket) Register(ctx context.Context, group, sid string, c strategy.Candidate) (uint64, bool, error) {
	key := memberKey(group, sid)
	for range 3 {
		var e, se entry
		err := together(func() (err error) {
			se, err = b.session(ctx, sid)
			return err
		}, func() (err error) {
			e, err = b.getLeader(ctx, key)
			return err
		})
		var s sessionRecord
		if err != nil || !se.live || json.Unmarshal(se.value, &s) != nil {
			return 0, false, err
		}
		r := memberRecord{ID: s.ID, Score: c.Score, Weight: c.Weight, Meta: c.Meta}
		var old memberRecord
		if e.live && json.Unmarshal(e.value, &old) == nil {
			r.Order = order(old, e.rev)
		}
		rev, err := b.write(ctx, key, encode(r), e.rev, 0)
		if !errors.Is(err, record.ErrConflict) {
			return order(r, rev), err == nil, err
		}
	}
	return 0, false, fmt.Errorf("nats: register in %q: the entry keeps changing", group)
}

// Deregister removes session sid's entry from group: one removal.
func (b *bucket) Deregister(ctx context.Context, group, sid string) error {
	return b.remove(ctx, memberKey(group, sid), 0)
}

// Members lists the entries of group whose sessions live, in order: a
// multi-key get of the entries, one of their sessions, and for each
// session found gone a read by the leader and a removal of its entry.
func (b *bucket) Members(ctx context.Context, group string) ([]strategy.Candidate, error) {
	prefix := memberPrefix + keyOf(group) + "."
	entries, err := b.scan(ctx, prefix+"*")
	if err != nil {
		return nil, err
	}
	sessions := make([]string, 0, len(entries))
	for key, e := range entries {
		if e.live {
			sessions = append(sessions, sessionPrefix+strings.TrimPrefix(key, prefix))
		}
	}
	alive, err := b.getMany(ctx, sessions)
	if err != nil {
		return nil, err
	}
	var out []strategy.Candidate
	for key, e := range entries {
		var r memberRecord
		if !e.live || json.Unmarshal(e.value, &r) != nil {
			continue
		}
		if sk := sessionPrefix + strings.TrimPrefix(key, prefix); !alive[sk].live {
			// Gone as a replica said; the leader may have its last write.
			if se, err := b.getLeader(ctx, sk); err != nil {
				return nil, err
			} else if !se.live {
				_ = b.remove(ctx, key, e.rev) // a session record never comes back
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
