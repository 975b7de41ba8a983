package record_test

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/hustings/hustings/strategy"
)

// entries is the group registry of a test driver: each group's entries by
// session ID, in the driver's maps and under its lock. An entry is listed
// while its session lives; orders grow per driver.
type entries struct {
	order  uint64
	groups map[string]map[string]strategy.Candidate
}

// register stores the entry of session sid, of candidate id, keeping its
// order on an update, and returns the order.
func (r *entries) register(group, sid, id string, c strategy.Candidate) uint64 {
	if r.groups == nil {
		r.groups = map[string]map[string]strategy.Candidate{}
	}
	g := r.groups[group]
	if g == nil {
		g = map[string]strategy.Candidate{}
		r.groups[group] = g
	}
	if old, ok := g[sid]; ok {
		c.Order = old.Order
	} else {
		r.order++
		c.Order = r.order
	}
	c.ID = id
	g[sid] = c
	return c.Order
}

// members lists group's entries whose session alive reports living, in
// order, and forgets the others.
func (r *entries) members(group string, alive func(sid string) bool) []strategy.Candidate {
	var out []strategy.Candidate
	for sid, c := range r.groups[group] {
		if !alive(sid) {
			delete(r.groups[group], sid)
			continue
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b strategy.Candidate) int { return cmp.Compare(a.Order, b.Order) })
	return out
}

func (d *mapDriver) Register(_ context.Context, group, sid string, c strategy.Candidate) (uint64, bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if ok, _ := d.alive(sid, time.Now()); !ok {
		return 0, false, nil
	}
	return d.entries.register(group, sid, d.sessions[sid].candidate, c), true, nil
}

func (d *mapDriver) Deregister(_ context.Context, group, sid string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.entries.groups[group], sid)
	return nil
}

func (d *mapDriver) Members(_ context.Context, group string) ([]strategy.Candidate, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := time.Now()
	return d.entries.members(group, func(sid string) bool { ok, _ := d.alive(sid, now); return ok }), nil
}

func (d *kvDriver) Register(_ context.Context, group, sid string, c strategy.Candidate) (uint64, bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.sweepLocked()
	k, ok := d.keys["s/"+sid]
	if !ok {
		return 0, false, nil
	}
	return d.entries.register(group, sid, k.candidate, c), true, nil
}

func (d *kvDriver) Deregister(_ context.Context, group, sid string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.entries.groups[group], sid)
	return nil
}

func (d *kvDriver) Members(_ context.Context, group string) ([]strategy.Candidate, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.sweepLocked()
	return d.entries.members(group, func(sid string) bool { _, ok := d.keys["s/"+sid]; return ok }), nil
}
