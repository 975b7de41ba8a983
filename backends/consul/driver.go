package consul

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/internal/record"
	"github.com/hustings/hustings/events"
)

var (
	_ record.Driver   = (*driver)(nil)
	_ record.Notifier = (*driver)(nil)
)

// maxOps is how many operations Consul takes in one transaction.
const maxOps = 128

// reads bounds the read transactions one Renew has in flight at once.
const reads = 8

// sessionRequest is the body of a session create: the Go client leaves
// out a LockDelay of 0, and Consul would then hold every key the session
// held from other sessions for 15 s after it ended.
type sessionRequest struct {
	Name      string
	TTL       string
	Behavior  string
	LockDelay string
	Checks    []string // empty: no health check, the TTL alone
}

// CreateSession makes a Consul session (TTL, behavior delete, lock-delay
// 0, no health check) and its session key, held by it: two round trips.
func (d *driver) CreateSession(ctx context.Context, s record.Session) (uint64, error) {
	var out struct{ ID string }
	_, err := d.c.Raw().Write("/v1/session/create", sessionRequest{
		Name: "hustings " + s.Candidate, TTL: s.TTL.String(),
		Behavior: api.SessionBehaviorDelete, LockDelay: "0s", Checks: []string{},
	}, &out, d.w(ctx))
	if err != nil {
		return 0, d.failed(err)
	}
	res, err := d.txn(ctx, api.TxnOps{lockOp(d.sessionKey(s.ID), out.ID, encode(sessionValue{ID: s.Candidate}))})
	if err != nil {
		_, _ = d.c.Session().Destroy(out.ID, d.w(context.WithoutCancel(ctx)))
		if errors.Is(err, record.ErrConflict) {
			err = fmt.Errorf("%w: consul: session %s ended before its key was written", backends.ErrUnavailable, out.ID)
		}
		return 0, err
	}
	d.mu.Lock()
	d.ids[s.ID] = opened{id: out.ID, candidate: s.Candidate}
	d.mu.Unlock()
	return res[0].ModifyIndex, nil
}

// Renew renews the Consul session and reads the held locks' keys (one
// read transaction per 128), sent together: one round trip.
func (d *driver) Renew(ctx context.Context, s record.Session, held []record.Lock) (record.Renewal, error) {
	id, ok := d.consulID(s.ID)
	if !ok {
		return record.Renewal{Now: time.Now()}, nil
	}
	var (
		got  []record.Lock
		gerr error
		wg   sync.WaitGroup
	)
	if len(held) > 0 {
		wg.Go(func() { got, gerr = d.confirm(ctx, s.ID, held) })
	}
	se, _, err := d.c.Session().Renew(id, d.w(ctx))
	wg.Wait()
	if err = errors.Join(d.failed(err), gerr); err != nil {
		return record.Renewal{}, err
	}
	return record.Renewal{Alive: se != nil, Locks: got, Now: time.Now()}, nil
}

// confirm reads the held locks' keys and returns those that session sid
// holds.
func (d *driver) confirm(ctx context.Context, sid string, held []record.Lock) ([]record.Lock, error) {
	n := (len(held) + maxOps - 1) / maxOps
	found := make([][]record.Lock, n)
	errs := make([]error, n)
	sem := make(chan struct{}, reads)
	var wg sync.WaitGroup
	for i := range n {
		part := held[i*maxOps : min(len(held), (i+1)*maxOps)]
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			ops := make(api.TxnOps, len(part))
			for j, h := range part {
				ops[j] = getOp(d.lockKey(h.Name))
			}
			kvs, err := d.txn(ctx, ops)
			if errs[i] = err; err != nil {
				return
			}
			for j, h := range part {
				if l, live := decodeLock(h.Name, kvs[j]); live && l.Session == sid {
					found[i] = append(found[i], l)
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var out []record.Lock
	for _, f := range found {
		out = append(out, f...)
	}
	return out, nil
}

// DeleteSession destroys the Consul session, which deletes every key it
// holds (its session key, its locks but holds, its registry entries) in
// one step of Consul's: one round trip.
func (d *driver) DeleteSession(ctx context.Context, s record.Session, held []record.Lock) ([]string, error) {
	d.mu.Lock()
	o, ok := d.ids[s.ID]
	delete(d.ids, s.ID)
	d.mu.Unlock()
	if !ok {
		return nil, nil
	}
	if _, err := d.c.Session().Destroy(o.id, d.w(ctx)); err != nil {
		return nil, d.failed(err)
	}
	freed := make([]string, len(held))
	for i, l := range held {
		freed[i] = l.Name
	}
	return freed, nil
}

// ReadLock reads the lock key and the reading session's key in one read
// transaction (one snapshot of the store).
func (d *driver) ReadLock(ctx context.Context, name, self string) (record.View, error) {
	ops := api.TxnOps{getOp(d.lockKey(name))}
	if self != "" {
		ops = append(ops, getOp(d.sessionKey(self)))
	}
	kvs, err := d.txn(ctx, ops)
	if err != nil {
		return record.View{}, err
	}
	v := record.View{Now: time.Now()}
	v.Lock, v.HolderAlive = decodeLock(name, kvs[0])
	if self != "" {
		v.SelfAlive = kvs[1].ModifyIndex != 0 && kvs[1].Session != ""
	}
	return v, nil
}

// CreateLock writes l where no key of l.Name is.
func (d *driver) CreateLock(ctx context.Context, l record.Lock) (record.Lock, error) {
	return d.write(ctx, l, &api.TxnOp{KV: &api.KVTxnOp{Verb: api.KVCheckNotExists, Key: d.lockKey(l.Name)}})
}

// SwapLock deletes the key of l.Name at index version and writes l in
// its place, in one transaction: a take, or a hold.
func (d *driver) SwapLock(ctx context.Context, l record.Lock, version uint64) (record.Lock, error) {
	return d.write(ctx, l, &api.TxnOp{KV: &api.KVTxnOp{Verb: api.KVDeleteCAS, Key: d.lockKey(l.Name), Index: version}})
}

// write writes l after the condition cond, in one transaction: held by
// l's Consul session (a lock op), or by none for a hold. A take's token
// is the write's ModifyIndex, a raft index: strictly increasing across
// every key of the cluster.
func (d *driver) write(ctx context.Context, l record.Lock, cond *api.TxnOp) (record.Lock, error) {
	key, value := d.lockKey(l.Name), lockValueOf(l)
	op := &api.TxnOp{KV: &api.KVTxnOp{Verb: api.KVSet, Key: key, Value: value}}
	if !l.Hold {
		id, ok := d.consulID(l.Session)
		if !ok {
			return record.Lock{}, record.ErrConflict // closed: the read after says so
		}
		op = lockOp(key, id, value)
	}
	kvs, err := d.txn(ctx, api.TxnOps{cond, op})
	if err != nil {
		return record.Lock{}, err
	}
	kv := kvs[len(kvs)-1]
	if l.Token == 0 {
		l.Token = events.Token(kv.ModifyIndex)
	}
	l.Version, l.TTL = kv.ModifyIndex, 0
	return l, nil
}

// DeleteLock deletes the key of name at index version.
func (d *driver) DeleteLock(ctx context.Context, name string, version uint64) error {
	_, err := d.txn(ctx, api.TxnOps{{KV: &api.KVTxnOp{Verb: api.KVDeleteCAS, Key: d.lockKey(name), Index: version}}})
	return err
}

// getOp reads key, or an empty pair (ModifyIndex 0) if there is none.
func getOp(key string) *api.TxnOp {
	return &api.TxnOp{KV: &api.KVTxnOp{Verb: api.KVGetOrEmpty, Key: key}}
}

// lockOp writes key held by Consul session id.
func lockOp(key, id string, value []byte) *api.TxnOp {
	return &api.TxnOp{KV: &api.KVTxnOp{Verb: api.KVLock, Key: key, Value: value, Session: id}}
}

// txn runs ops in one transaction and returns the key of each result.
// A transaction that Consul rolled back is record.ErrConflict (a
// condition failed, a key is held by another session, or the session
// ended: the core reads again), unless an ACL refused it (ErrInvalid).
func (d *driver) txn(ctx context.Context, ops api.TxnOps) ([]*api.KVPair, error) {
	ok, resp, _, err := d.c.Txn().Txn(ops, (&api.QueryOptions{}).WithContext(ctx))
	if err != nil {
		return nil, d.failed(err)
	}
	if !ok {
		for _, e := range resp.Errors {
			if strings.Contains(strings.ToLower(e.What), "permission denied") {
				return nil, fmt.Errorf("%w: consul: the client's ACL token may not write %s: %s", backends.ErrInvalid, d.prefix, e.What)
			}
		}
		return nil, record.ErrConflict
	}
	kvs := make([]*api.KVPair, 0, len(resp.Results))
	for _, r := range resp.Results {
		kvs = append(kvs, r.KV)
	}
	if len(kvs) == 0 {
		return nil, nil
	}
	for i, kv := range kvs {
		if kv == nil {
			kvs[i] = &api.KVPair{}
		}
	}
	return kvs, nil
}

// w returns write options bound to ctx.
func (d *driver) w(ctx context.Context) *api.WriteOptions {
	return (&api.WriteOptions{}).WithContext(ctx)
}

// failed translates the client's errors: a TTL out of the server's range
// or an ACL refusal is ErrInvalid, anything else ErrUnavailable.
func (d *driver) failed(err error) error {
	if err == nil {
		return nil
	}
	var se api.StatusError
	if errors.As(err, &se) {
		switch {
		case strings.Contains(se.Body, "Session TTL"):
			return fmt.Errorf("%w: consul: %s (the server's session_ttl_min and 24h bound a session's TTL)", backends.ErrInvalid, strings.TrimSpace(se.Body))
		case se.Code == 403:
			return fmt.Errorf("%w: consul: the client's ACL token is refused: %s", backends.ErrInvalid, strings.TrimSpace(se.Body))
		}
	}
	return fmt.Errorf("%w: consul: %w", backends.ErrUnavailable, err)
}
