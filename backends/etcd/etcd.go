package etcd

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/validate"
)

var (
	_ backends.Backend = (*Backend)(nil)
)

// DefaultPrefix is where a Backend keeps its keys unless WithPrefix says
// otherwise.
const DefaultPrefix = "/hustings/"

// Option configures a Backend.
type Option interface {
	apply(*Backend)
}

type optionFunc func(*Backend)

func (f optionFunc) apply(b *Backend) { f(b) }

// WithPrefix sets the key prefix every key of the Backend starts with, so
// several services (or tests) can share one etcd cluster. The default is
// DefaultPrefix, "/hustings/". It must end with "/", so that it keeps its
// keys apart from those of a prefix it begins ("/app/" and "/app2/"); New
// reports ErrInvalid otherwise.
func WithPrefix(prefix string) Option {
	return optionFunc(func(b *Backend) { b.prefix = prefix })
}

// Backend is a store of named locks in etcd. Create it with New; the zero
// value is not usable. It is safe for concurrent use.
type Backend struct {
	client *clientv3.Client
	prefix string
}

// New returns a Backend that keeps its locks in etcd through client. The
// Backend never closes client: the caller does, after the last call. New
// starts no goroutine and makes no request. It returns an error matching
// backends.ErrInvalid when client is nil or the prefix does not end with
// "/".
func New(client *clientv3.Client, opts ...Option) (*Backend, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: etcd: nil client", backends.ErrInvalid)
	}
	b := &Backend{client: client, prefix: DefaultPrefix}
	for _, o := range opts {
		if o != nil {
			o.apply(b)
		}
	}
	if !strings.HasSuffix(b.prefix, "/") {
		return nil, fmt.Errorf("%w: etcd: prefix %q must end with \"/\"", backends.ErrInvalid, b.prefix)
	}
	return b, nil
}

// Holder reports who holds the lock name; a zero Holder means it is free.
// A lock released with a hold reports the releasing candidate until the
// hold ends. It takes two round trips (the key, its lease's TTL), one
// more for a lock acquired with a lease (its guard). Expires is this
// process's clock plus the shortest remaining TTL, in whole seconds as
// etcd counts them.
func (b *Backend) Holder(ctx context.Context, name string) (backends.Holder, error) {
	if err := validate.Name(name); err != nil {
		return backends.Holder{}, err
	}
	if err := ctxErr(ctx, "holder"); err != nil {
		return backends.Holder{}, err
	}
	start := time.Now()
	resp, err := b.client.Get(ctx, b.lockKey(name))
	if err != nil {
		return backends.Holder{}, translate(ctx, "holder", err)
	}
	if len(resp.Kvs) == 0 {
		return backends.Holder{}, nil
	}
	l, err := b.decode(ctx, resp.Kvs[0])
	if err != nil || !l.alive {
		return backends.Holder{}, err
	}
	h := backends.Holder{ID: l.v.ID, Token: l.token}
	if l.v.Session != 0 {
		h.Session = strconv.FormatInt(int64(l.v.Session), 16)
	}
	for _, lease := range []clientv3.LeaseID{clientv3.LeaseID(resp.Kvs[0].Lease), l.v.Guard} {
		if lease == clientv3.NoLease {
			continue
		}
		ttl, err := b.client.TimeToLive(ctx, lease)
		if err != nil {
			return backends.Holder{}, translate(ctx, "holder's lease", err)
		}
		if ttl.TTL < 0 {
			return backends.Holder{}, nil // it expired since the read
		}
		if end := start.Add(time.Duration(ttl.TTL) * time.Second); h.Expires.IsZero() || end.Before(h.Expires) {
			h.Expires = end
		}
	}
	return h, nil
}

// value is what a lock key holds: who holds it, and how it is bound.
type value struct {
	// ID is the holding candidate's ID.
	ID string `json:"id"`
	// Session is the lease of the holding session; 0 once released with a
	// hold (held by nobody alive).
	Session clientv3.LeaseID `json:"session,omitempty"`
	// Guard is the lease of the lock's guard key when it was acquired with
	// a lease; 0 otherwise.
	Guard clientv3.LeaseID `json:"guard,omitempty"`
}

func (v value) encode() string {
	data, _ := json.Marshal(v) // a struct of strings and numbers always marshals
	return string(data)
}

// lockState is a lock key as read: its value, its token (create
// revision), and whether it is alive (its guard, if any, still exists).
type lockState struct {
	v     value
	token events.Token
	rev   int64
	alive bool
}

// decode reads a lock key; for a guarded lock it checks that the guard
// key still exists (one more round trip).
func (b *Backend) decode(ctx context.Context, kv *mvccpb.KeyValue) (lockState, error) {
	var v value
	if err := json.Unmarshal(kv.Value, &v); err != nil || v.ID == "" {
		return lockState{}, fmt.Errorf("%w: etcd: key %q holds a value this backend did not write: %q", backends.ErrUnavailable, kv.Key, kv.Value)
	}
	l := lockState{v: v, token: events.Token(kv.CreateRevision), rev: kv.CreateRevision, alive: true}
	if v.Guard == 0 {
		return l, nil
	}
	resp, err := b.client.Get(ctx, guardKey(string(kv.Key), v.Guard), clientv3.WithCountOnly())
	if err != nil {
		return lockState{}, translate(ctx, "read guard", err)
	}
	l.alive = resp.Count > 0
	return l, nil
}

// lockKey is the key of lock name. Names have no control characters, so
// no lock key has another lock key followed by "\x00" as a prefix.
func (b *Backend) lockKey(name string) string { return b.prefix + "lock/" + name }

// guardKey is the key, bound to lease g, whose existence keeps alive the
// lock of key acquired with g. It sorts right after key, so a watch of the
// range [key, key+"\x01") sees the guard go.
func guardKey(key string, g clientv3.LeaseID) string {
	return key + "\x00" + strconv.FormatInt(int64(g), 16)
}

// watchEnd is the end of the range a watch of key covers: the key and its
// guard keys.
func watchEnd(key string) string { return key + "\x01" }

// sessionKey is the key bound to a session's lease, whose existence shows
// in a transaction that the session is alive.
func (b *Backend) sessionKey(lease clientv3.LeaseID) string {
	return b.prefix + "session/" + strconv.FormatInt(int64(lease), 16)
}

// ttlSeconds rounds d up to whole seconds, at least 1: etcd leases have a
// TTL in seconds, and must never run out before d.
func ttlSeconds(d time.Duration) int64 {
	s := int64((d + time.Second - 1) / time.Second)
	return max(s, 1)
}

// grant grants a lease that lasts at least d, or fails with
// backends.ErrInvalid if the server grants less. It also returns the
// store's revision when the lease was granted: every write bound to the
// lease comes after it.
func (b *Backend) grant(ctx context.Context, what string, d time.Duration) (clientv3.LeaseID, int64, error) {
	want := ttlSeconds(d)
	resp, err := b.client.Grant(ctx, want)
	if err != nil {
		return 0, 0, translate(ctx, what, err)
	}
	if resp.TTL < want {
		b.revoke(ctx, resp.ID)
		return 0, 0, fmt.Errorf("%w: etcd: %s: asked for a lease of %ds (%v rounded up) and the server granted %ds; "+
			"callers count on the full TTL, so the lease must last at least as long as asked", backends.ErrInvalid, what, want, d, resp.TTL)
	}
	return resp.ID, resp.ResponseHeader.GetRevision(), nil
}

// revoke revokes lease id, best effort: a lease that is not revoked ends
// with its TTL anyway.
func (b *Backend) revoke(ctx context.Context, id clientv3.LeaseID) {
	if ctx.Err() == nil {
		_, _ = b.client.Revoke(ctx, id)
	}
}
