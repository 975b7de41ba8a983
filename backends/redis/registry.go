package redis

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/internal/validate"
	"github.com/hustings/hustings/strategy"
)

// groupKeys are the names of one group's registry keys. They share the
// hash tag {group}, so a script may touch them together on a Cluster.
type groupKeys struct {
	members string // hash: session ID → "<order> <entry JSON>"
	order   string // the registration counter; never deleted
}

func (b *Backend) groupKeys(group string) groupKeys {
	base := b.prefix + ":{" + tagEscaper.Replace(group) + "}:"
	return groupKeys{members: base + "members", order: base + "order"}
}

// registerScript stores a session's entry, keeping the order it was given
// at its first registration or taking the next value of the counter.
//
// KEYS: members, order. ARGV: session ID, entry JSON. Returns the order as
// a string.
var registerScript = goredis.NewScript(`
local cur = redis.call('HGET', KEYS[1], ARGV[1])
local order = cur and string.match(cur, '^(%d+) ')
if not order then
  order = string.format('%d', redis.call('INCR', KEYS[2]))
end
redis.call('HSET', KEYS[1], ARGV[1], order .. ' ' .. ARGV[2])
return order
`)

// entry is what the members hash stores of a candidate, after its order;
// the ID is the session's.
type entry struct {
	Score  float64           `json:"s"`
	Weight float64           `json:"w"`
	Meta   map[string]string `json:"m,omitempty"`
}

// parseEntry reads the members hash field of session sid.
func parseEntry(sid, raw string) (strategy.Candidate, error) {
	bad := fmt.Errorf("malformed registry entry %q of session %q (is the key prefix shared with another application?)", raw, sid)
	order, body, ok := strings.Cut(raw, " ")
	n, err := strconv.ParseUint(order, 10, 64)
	if !ok || err != nil || len(sid) <= sidRandLen || sid[sidRandLen] != ':' {
		return strategy.Candidate{}, bad
	}
	var e entry
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		return strategy.Candidate{}, fmt.Errorf("%w: %w", bad, err)
	}
	return strategy.Candidate{ID: sid[sidRandLen+1:], Order: n, Score: e.Score, Weight: e.Weight, Meta: e.Meta}, nil
}

// Members lists the candidates registered in group whose session keys
// exist, in registration order: an HGETALL of the group's entries, then
// one pipeline of EXISTS on their session keys. Entries of sessions found
// gone are deleted as they are found (best effort: a session key is never
// recreated, so they are dead for good).
func (b *Backend) Members(ctx context.Context, group string) ([]strategy.Candidate, error) {
	if err := validate.Name(group); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, unavailable(ctx, "members", err)
	}
	k := b.groupKeys(group)
	all, err := b.client.HGetAll(ctx, k.members).Result()
	if err != nil {
		return nil, unavailable(ctx, "members", err)
	}
	if len(all) == 0 {
		return nil, nil
	}
	sids := make([]string, 0, len(all))
	for sid := range all {
		sids = append(sids, sid)
	}
	alive, err := b.sessionsExist(ctx, sids)
	if err != nil {
		return nil, unavailable(ctx, "members", err)
	}
	var out []strategy.Candidate
	var dead []string
	for i, sid := range sids {
		if !alive[i] {
			dead = append(dead, sid)
			continue
		}
		c, err := parseEntry(sid, all[sid])
		if err != nil {
			return nil, unavailable(ctx, "members", err)
		}
		out = append(out, c)
	}
	if len(dead) > 0 {
		_ = b.client.HDel(ctx, k.members, dead...).Err()
	}
	slices.SortFunc(out, func(x, y strategy.Candidate) int { return cmp.Compare(x.Order, y.Order) })
	return out, nil
}

// sessionsExist reports, for each session ID, whether its key exists: one
// pipeline of EXISTS, one command per key since the keys are in slots of
// their own.
func (b *Backend) sessionsExist(ctx context.Context, sids []string) ([]bool, error) {
	cmds := make([]*goredis.IntCmd, len(sids))
	_, err := b.client.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, sid := range sids {
			cmds[i] = p.Exists(ctx, b.sessionKey(sid))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]bool, len(sids))
	for i, c := range cmds {
		out[i] = c.Val() == 1
	}
	return out, nil
}

// Register adds or updates the session's entry in group: the register
// script and an EXISTS of the session key in one pipeline. The order is
// assigned at the first registration and kept on updates. If the session
// key is gone, the entry is deleted again and the call reports
// backends.ErrSessionLost.
func (s *session) Register(ctx context.Context, group string, c strategy.Candidate) (strategy.Candidate, error) {
	if err := s.usable(); err != nil {
		return strategy.Candidate{}, err
	}
	if err := validate.Candidate(group, c); err != nil {
		return strategy.Candidate{}, err
	}
	if err := ctx.Err(); err != nil {
		return strategy.Candidate{}, unavailable(ctx, "register", err)
	}
	body, err := json.Marshal(entry{Score: c.Score, Weight: c.Weight, Meta: c.Meta})
	if err != nil {
		return strategy.Candidate{}, fmt.Errorf("%w: redis: register: %w", backends.ErrInvalid, err)
	}
	k := s.b.groupKeys(group)
	s.trackGroup(group, true)
	call := scriptCall{registerScript, []string{k.members, k.order}, []any{s.sid, string(body)}}
	reply, alive, err := s.runWithSession(ctx, call)
	if err != nil {
		return strategy.Candidate{}, unavailable(ctx, "register", err)
	}
	if !alive {
		// A session that is gone is listed nowhere; Members would drop
		// the entry anyway, this only tidies up.
		_ = s.b.client.HDel(ctx, k.members, s.sid).Err()
		return strategy.Candidate{}, s.lost()
	}
	str, _ := reply.(string)
	order, err := strconv.ParseUint(str, 10, 64)
	if err != nil {
		return strategy.Candidate{}, unavailable(ctx, "register", fmt.Errorf("unexpected register reply %#v", reply))
	}
	c.ID, c.Order = s.id, order
	if c.Meta != nil {
		c.Meta = maps.Clone(c.Meta)
	}
	return c, nil
}

// Deregister deletes the session's entry from group: one HDEL, which does
// nothing if there is no entry.
func (s *session) Deregister(ctx context.Context, group string) error {
	if err := s.check(ctx, "deregister", group); err != nil {
		return err
	}
	if err := s.b.client.HDel(ctx, s.b.groupKeys(group).members, s.sid).Err(); err != nil {
		return unavailable(ctx, "deregister", err)
	}
	s.trackGroup(group, false)
	return nil
}

// trackGroup records whether the session may have an entry in group, for
// Close to delete it.
func (s *session) trackGroup(group string, in bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if in {
		s.groups[group] = struct{}{}
	} else {
		delete(s.groups, group)
	}
}
