package etcd

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/internal/validate"
	"github.com/hustings/hustings/strategy"
)

// Members lists the candidates registered in group, in registration order,
// with one prefix read sorted by create revision. An entry lives as long
// as its session's lease: etcd deletes it when the lease is revoked or
// expires, so the list may show a lost session until etcd's expiry check
// has run (some hundreds of milliseconds after the TTL).
func (b *Backend) Members(ctx context.Context, group string) ([]strategy.Candidate, error) {
	if err := validate.Name(group); err != nil {
		return nil, err
	}
	if err := ctxErr(ctx, "members"); err != nil {
		return nil, err
	}
	resp, err := b.client.Get(ctx, b.memberPrefix(group), clientv3.WithPrefix(),
		clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
	if err != nil {
		return nil, translate(ctx, "members", err)
	}
	out := make([]strategy.Candidate, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		c, err := decodeMember(kv)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// Register puts the session's entry in group, bound to the session's
// lease, in one round trip. The entry's key is the same for every
// Register of the session, so etcd keeps its create revision, the Order,
// across updates. A session whose lease is gone gets
// backends.ErrSessionLost and no entry.
func (s *session) Register(ctx context.Context, group string, c strategy.Candidate) (strategy.Candidate, error) {
	if err := s.usable(); err != nil {
		return strategy.Candidate{}, err
	}
	if err := validate.Candidate(group, c); err != nil {
		return strategy.Candidate{}, err
	}
	if err := ctxErr(ctx, "register"); err != nil {
		return strategy.Candidate{}, err
	}
	m := member{ID: s.id, Score: c.Score, Weight: c.Weight, Meta: c.Meta}
	data, err := json.Marshal(m)
	if err != nil { // cannot be: finite numbers and strings
		return strategy.Candidate{}, fmt.Errorf("%w: etcd: register: %w", backends.ErrInvalid, err)
	}
	// The put fails with "lease not found" once the session's lease is gone,
	// and returns the key's previous version, whose create revision stays.
	resp, err := s.b.client.Put(ctx, s.memberKey(group), string(data), clientv3.WithLease(s.lease), clientv3.WithPrevKV())
	if err != nil {
		return strategy.Candidate{}, translate(ctx, "register", err)
	}
	order := resp.Header.Revision
	if resp.PrevKv != nil {
		order = resp.PrevKv.CreateRevision
	}
	return m.candidate(order), nil
}

// Deregister deletes the session's entry from group, in one round trip.
// Deleting an entry that is not there, or one whose session the server
// already forgot, is not an error.
func (s *session) Deregister(ctx context.Context, group string) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := validate.Name(group); err != nil {
		return err
	}
	if err := ctxErr(ctx, "deregister"); err != nil {
		return err
	}
	_, err := s.b.client.Delete(ctx, s.memberKey(group))
	return translate(ctx, "deregister", err)
}

// member is what a registry key holds; the Order is the key's create
// revision.
type member struct {
	ID     string            `json:"id"`
	Score  float64           `json:"score"`
	Weight float64           `json:"weight"`
	Meta   map[string]string `json:"meta,omitempty"`
}

func (m member) candidate(order int64) strategy.Candidate {
	return strategy.Candidate{ID: m.ID, Order: uint64(order), Score: m.Score, Weight: m.Weight, Meta: m.Meta}
}

// decodeMember reads a registry key.
func decodeMember(kv *mvccpb.KeyValue) (strategy.Candidate, error) {
	var m member
	if err := json.Unmarshal(kv.Value, &m); err != nil || m.ID == "" {
		return strategy.Candidate{}, fmt.Errorf("%w: etcd: key %q holds a value this backend did not write: %q", backends.ErrUnavailable, kv.Key, kv.Value)
	}
	return m.candidate(kv.CreateRevision), nil
}

// memberPrefix is the prefix of group's registry keys. Group names have no
// control characters, so no other group's keys start with it.
func (b *Backend) memberPrefix(group string) string { return b.prefix + "member/" + group + "\x00" }

// memberKey is the key of the session's entry in group: one per session,
// named by its lease.
func (s *session) memberKey(group string) string {
	return s.b.memberPrefix(group) + strconv.FormatInt(int64(s.lease), 16)
}
