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
	"sync"

	"github.com/hustings/hustings/backends/internal/record"
	"github.com/hustings/hustings/strategy"
)

func memberKey(group, sid string) string { return memberPrefix + keyOf(group) + "." + sid }

// Register writes session sid's entry in group (member.<group>.<sid>),
// keeping the order of its first write: it reads the entry and the
// session record together, then writes the entry on the revision read.
func (d *driver) Register(ctx context.Context, group, sid string, c strategy.Candidate) (uint64, bool, error) {
	key := memberKey(group, sid)
	for range 3 {
		var (
			e, se     entry
			err, serr error
			wg        sync.WaitGroup
		)
		wg.Go(func() { se, serr = d.session(ctx, sid) })
		e, err = d.b.getLeader(ctx, key)
		wg.Wait()
		var s sessionRecord
		if err = errors.Join(err, serr); err != nil || !se.live || json.Unmarshal(se.value, &s) != nil {
			return 0, false, d.failed(err)
		}
		r := memberRecord{ID: s.ID, Score: c.Score, Weight: c.Weight, Meta: c.Meta}
		var old memberRecord
		if e.live && json.Unmarshal(e.value, &old) == nil {
			r.Order = order(old, e.rev)
		}
		rev, err := d.b.write(ctx, key, encode(r), e.rev, 0)
		if err = d.failed(err); !errors.Is(err, record.ErrConflict) {
			return order(r, rev), err == nil, err
		}
	}
	return 0, false, fmt.Errorf("nats: register in %q: the entry keeps changing", group)
}

// Deregister removes session sid's entry from group: one removal.
func (d *driver) Deregister(ctx context.Context, group, sid string) error {
	return d.failed(d.b.remove(ctx, memberKey(group, sid), 0))
}

// Members lists the entries of group whose sessions live, in order: one
// multi-key get of the group's entries (at most 1,024), one of their
// sessions' records, and for each session found gone a read of it by the
// stream's leader and a removal of its entry.
func (d *driver) Members(ctx context.Context, group string) ([]strategy.Candidate, error) {
	prefix := memberPrefix + keyOf(group) + "."
	entries, err := d.b.getMany(ctx, []string{prefix + "*"})
	if err != nil {
		return nil, d.failed(err)
	}
	sessions := make([]string, 0, len(entries))
	for key, e := range entries {
		if e.live {
			sessions = append(sessions, sessionPrefix+strings.TrimPrefix(key, prefix))
		}
	}
	alive, err := d.b.getMany(ctx, sessions)
	if err != nil {
		return nil, d.failed(err)
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
			se, err := d.b.getLeader(ctx, sk)
			if err != nil {
				return nil, d.failed(err)
			}
			if !se.live {
				_ = d.b.remove(ctx, key, e.rev) // a session record never comes back
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
