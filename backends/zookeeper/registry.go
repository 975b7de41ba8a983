package zookeeper

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hustings/hustings/internal/validate"
	"github.com/hustings/hustings/strategy"
)

// Members lists the live entries of group in registration order (their
// czxid). An entry is dead once its session node is gone or the server's
// clock has passed its mtime + TTL; dead entries are deleted on the way
// (with the expired session node, unless a renewal came first). It costs
// a listing, two reads per entry and, if any entry's session lives, one
// write to read the server's clock.
func (b *Backend) Members(ctx context.Context, group string) ([]strategy.Candidate, error) {
	if err := validate.Name(group); err != nil {
		return nil, err
	}
	parent := b.groupPath(group)
	names, _, err := b.children(ctx, group, parent)
	if err != nil {
		return nil, err
	}
	var out []strategy.Candidate
	var now int64
	for _, sid := range names {
		c, ok, err := b.entry(ctx, parent, sid, &now)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(x, y strategy.Candidate) int { return cmp.Compare(x.Order, y.Order) })
	return out, nil
}

// entry reads the entry of session sid under parent and reports whether
// it is alive; a dead one is deleted. *now is the server's clock, read
// when first needed (see lookOnce).
func (b *Backend) entry(ctx context.Context, parent, sid string, now *int64) (strategy.Candidate, bool, error) {
	p := parent + "/" + sid
	var d entryData
	st, err := b.get(ctx, p, &d)
	if err != nil || st == nil {
		return strategy.Candidate{}, false, err
	}
	sp := b.sessionsPath() + "/" + sid
	var sd sessionData
	sst, err := b.get(ctx, sp, &sd)
	if err != nil {
		return strategy.Candidate{}, false, err
	}
	if sst == nil { // its session was closed or expired
		err := b.deleteNode(ctx, p, st.Version)
		return strategy.Candidate{}, false, ignoreRace(err)
	}
	if err := b.readClock(ctx, parent, now); err != nil {
		return strategy.Candidate{}, false, err
	}
	if *now >= sst.Mtime+sd.TTL {
		err := b.deleteNodes(ctx, sp, sst.Version, p, st.Version)
		if !errors.Is(err, zk.ErrBadVersion) { // else renewed or updated meanwhile: alive
			return strategy.Candidate{}, false, ignoreRace(err)
		}
	}
	c := strategy.Candidate{ID: d.ID, Order: uint64(st.Czxid), Score: d.Score, Weight: d.Weight, Meta: d.Meta}
	return c, true, nil
}

// ignoreRace drops the errors of a delete that others beat.
func ignoreRace(err error) error {
	if errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrBadVersion) {
		return nil
	}
	return err
}

// Register writes the session's entry in group: the node
// root/groups/<group>/<sid>, ephemeral, holding the candidate's ID, score,
// weight and metadata. Its first registration creates the node, whose
// czxid is the order: global and strictly increasing, so later
// registrations sort after earlier ones whatever became of the group's
// node meanwhile. Updates set the node's data and keep the order. If
// others deleted the entry (they judged the session dead) it is created
// anew, with a new order. One round trip, two for a group's first entry.
func (s *session) Register(ctx context.Context, group string, c strategy.Candidate) (strategy.Candidate, error) {
	if err := s.usable(); err != nil {
		return strategy.Candidate{}, err
	}
	if err := validate.Candidate(group, c); err != nil {
		return strategy.Candidate{}, err
	}
	key := registryKey(group)
	if err := s.enter(ctx, key); err != nil {
		return strategy.Candidate{}, err
	}
	defer s.leave(key)
	if err := s.alive(ctx, time.Now()); err != nil {
		return strategy.Candidate{}, err
	}
	c.ID, c.Meta = s.id, maps.Clone(c.Meta)
	data := encode(entryData{ID: c.ID, Score: c.Score, Weight: c.Weight, Meta: c.Meta})
	p := s.b.groupPath(group) + "/" + s.sid
	order, err := s.putEntry(ctx, group, p, data)
	if err != nil {
		return strategy.Candidate{}, err
	}
	c.Order = order
	return c, nil
}

// putEntry sets the data of the entry p, creating it if it is not there,
// and returns its czxid.
func (s *session) putEntry(ctx context.Context, group, p string, data []byte) (uint64, error) {
	if s.entryOf(group) != "" {
		order, err := s.setEntry(ctx, group, p, data)
		if !errors.Is(err, zk.ErrNoNode) {
			return order, err
		}
	}
	return s.createEntry(ctx, group, p, data)
}

// setEntry sets the data of the existing entry p and returns its czxid.
// A missing entry is zk.ErrNoNode as it is.
func (s *session) setEntry(ctx context.Context, group, p string, data []byte) (uint64, error) {
	var st *zk.Stat
	err := s.b.call(ctx, "register in", group, func() error {
		var err error
		st, err = s.b.conn.Set(p, data, -1)
		return err
	})
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return 0, err
	case err != nil:
		return 0, s.fail(ctx, "register in "+group, err)
	}
	return uint64(st.Czxid), nil
}

// createEntry creates the entry p in a transaction that also writes the
// group's node, whose new mzxid is the entry's czxid.
func (s *session) createEntry(ctx context.Context, group, p string, data []byte) (uint64, error) {
	entry := &zk.CreateRequest{Path: p, Data: data, Acl: s.b.acl, Flags: zk.FlagEphemeral}
	res, created, _, err := s.createIn(ctx, "register in", group, s.b.groupPath(group), entry)
	var order uint64
	switch {
	case errors.Is(err, zk.ErrNodeExists): // made by a call whose answer was lost
		if order, err = s.setEntry(ctx, group, p, data); err != nil {
			return 0, s.fail(ctx, "register in "+group, err)
		}
	case err != nil:
		return 0, s.fail(ctx, "register in "+group, err)
	default:
		order = uint64(res[1].Stat.Mzxid)
	}
	if err := s.adopt(ctx, p, created, func() bool { return s.recordEntry(group, p) }); err != nil {
		return 0, err
	}
	return order, nil
}

// Deregister deletes the session's entry in group, one round trip; an
// entry that is not there is fine.
func (s *session) Deregister(ctx context.Context, group string) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := validate.Name(group); err != nil {
		return err
	}
	key := registryKey(group)
	if err := s.enter(ctx, key); err != nil {
		return err
	}
	defer s.leave(key)
	p := s.b.groupPath(group) + "/" + s.sid
	err := s.b.call(ctx, "deregister from", group, func() error { return s.b.conn.Delete(p, -1) })
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return s.fail(ctx, "deregister from "+group, err)
	}
	s.forgetEntry(group)
	return nil
}

// registryKey is the key of group among the names that enter serializes:
// lock names hold no control character, so it is never a lock's.
func registryKey(group string) string { return "\x00group\x00" + group }

// entryOf returns the path of the session's entry in group, or "".
func (s *session) entryOf(group string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.entries[group]
}

// recordEntry makes p the session's entry in group. It returns false, and
// records nothing, once the session is closed or lost.
func (s *session) recordEntry(group, p string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.lost != nil {
		return false
	}
	s.entries[group] = p
	return true
}

// forgetEntry drops the session's entry in group.
func (s *session) forgetEntry(group string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.entries, group)
}
