package consul

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/hashicorp/consul/api"

	"github.com/hustings/hustings/backends/internal/record"
	"github.com/hustings/hustings/strategy"
)

// Register writes session sid's entry in group, held by its Consul
// session (so it is deleted when the session ends): one transaction. Its
// order is the key's CreateIndex, kept while the key lives.
func (d *driver) Register(ctx context.Context, group, sid string, c strategy.Candidate) (uint64, bool, error) {
	o, ok := d.opened(sid)
	if !ok {
		return 0, false, nil
	}
	v := memberValue{ID: o.candidate, Score: c.Score, Weight: c.Weight, Meta: c.Meta}
	kvs, err := d.txn(ctx, api.TxnOps{lockOp(d.memberKey(group, sid), o.id, encode(v))})
	switch {
	case errors.Is(err, record.ErrConflict): // the session ended
		return 0, false, nil
	case err != nil:
		return 0, false, err
	}
	return kvs[0].CreateIndex, true, nil
}

// Deregister deletes session sid's entry in group.
func (d *driver) Deregister(ctx context.Context, group, sid string) error {
	_, err := d.c.KV().Delete(d.memberKey(group, sid), d.w(ctx))
	return d.failed(err)
}

// Members lists group's entries held by a session, in CreateIndex order.
func (d *driver) Members(ctx context.Context, group string) ([]strategy.Candidate, error) {
	kvs, _, err := d.c.KV().List(d.memberDir(group), (&api.QueryOptions{}).WithContext(ctx))
	if err != nil {
		return nil, d.failed(err)
	}
	kvs = slices.DeleteFunc(kvs, func(kv *api.KVPair) bool {
		return kv.Session == "" || strings.Contains(strings.TrimPrefix(kv.Key, d.memberDir(group)), "/")
	})
	slices.SortFunc(kvs, func(a, b *api.KVPair) int { return cmp.Compare(a.CreateIndex, b.CreateIndex) })
	out := make([]strategy.Candidate, 0, len(kvs))
	for _, kv := range kvs {
		var v memberValue
		if json.Unmarshal(kv.Value, &v) != nil || v.ID == "" {
			continue
		}
		out = append(out, strategy.Candidate{ID: v.ID, Order: kv.CreateIndex, Score: v.Score, Weight: v.Weight, Meta: v.Meta})
	}
	return out, nil
}
