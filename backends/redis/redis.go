package redis

import (
	"context"
	"fmt"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/internal/hub"
	"github.com/hustings/hustings/internal/validate"
)

var (
	_ backends.Backend        = (*Backend)(nil)
	_ backends.ReleaseWatcher = (*Backend)(nil)
)

// DefaultPrefix starts every key and channel name unless WithPrefix says
// otherwise.
const DefaultPrefix = "hustings"

// Option configures a Backend.
type Option interface {
	apply(*Backend)
}

type optionFunc func(*Backend)

func (f optionFunc) apply(b *Backend) { f(b) }

// WithPrefix starts every key and channel name with prefix and a colon, so
// that several applications can share one Redis. Default "hustings". It
// must be non-empty and hold no '{' or '}' (they would change the Cluster
// hash slot of the keys); New rejects it otherwise.
func WithPrefix(prefix string) Option {
	return optionFunc(func(b *Backend) { b.prefix = prefix })
}

// Backend stores locks in Redis. Create it with New; the zero value is not
// usable. It is safe for concurrent use.
type Backend struct {
	client goredis.UniversalClient
	prefix string
	hub    *hub.Hub[struct{}] // every Watch, over one connection
	losers losers             // the sessions whose loss watch follows a lock

	// oneServer: client is a *goredis.Client, which talks to one server
	// (standalone, or the primary a Sentinel names), so a script may read
	// keys of any slot. Any other client (ClusterClient, Ring, a wrapper)
	// may spread keys over servers, and KeepAlive reads locks one by one.
	oneServer bool
}

// New returns a Backend that sends its commands through client. It does no
// I/O, starts no goroutine, and never closes client: the caller does, after
// the last call and the last watch ended. Give the client
// ContextTimeoutEnabled: true, or calls to a server that does not answer
// last the client's read and write timeouts whatever their context says.
// Bad options return an error matching backends.ErrInvalid.
func New(client goredis.UniversalClient, opts ...Option) (*Backend, error) {
	if validate.Nil(client) {
		return nil, fmt.Errorf("%w: redis: nil client", backends.ErrInvalid)
	}
	_, oneServer := client.(*goredis.Client)
	b := &Backend{client: client, prefix: DefaultPrefix, oneServer: oneServer}
	b.hub = newHub(client, b.losers.took)
	for _, o := range opts {
		if o != nil {
			o.apply(b)
		}
	}
	if b.prefix == "" || strings.ContainsAny(b.prefix, "{}") {
		return nil, fmt.Errorf("%w: redis: key prefix %q must be non-empty and hold no '{' or '}'", backends.ErrInvalid, b.prefix)
	}
	return b, nil
}

// Open starts a session for candidate id: a new session key that lives ttl
// (rounded up to a millisecond) unless KeepAlive renews it. On a single
// server (a *goredis.Client) Open makes no round trip: the key is set by
// the session's first call, in the same pipeline, so a one-shot run is an
// Acquire and a Close, two round trips; the key then lives at least ttl
// after the start of Open, as promised. An unreachable server is reported
// by that first call. On a Cluster, Open sets the key itself (one round
// trip): the key and a lock live on different nodes there, and another
// client could see the lock before the key.
func (b *Backend) Open(ctx context.Context, id string, ttl time.Duration) (backends.Session, error) {
	if err := validate.Session(id, ttl); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, unavailable(ctx, "open", err)
	}
	s := newSession(b, id, ttl)
	if b.oneServer {
		// The key is set by the session's first call, in its pipeline:
		// one server applies a pipeline in order, so no lock of the
		// session is seen before its key (see session.opening).
		s.pending, s.opened = true, time.Now()
		return s, nil
	}
	// SET NX fails only if the key exists: with a fresh random session ID
	// that is this very SET, retried by the client after a network error.
	if err := b.client.SetNX(ctx, s.key, id, s.ttl).Err(); err != nil {
		return nil, unavailable(ctx, "open", err)
	}
	return s, nil
}

// Holder reports who holds the lock name: two round trips, the lock key
// with its PTTL and then its holder's session key's PTTL. A lock whose
// session expired is free; a lock released with a hold reports the
// releasing candidate until the hold ends. Expires is this process's
// clock plus the shorter of the PTTLs.
func (b *Backend) Holder(ctx context.Context, name string) (backends.Holder, error) {
	if err := validate.Name(name); err != nil {
		return backends.Holder{}, err
	}
	if err := ctx.Err(); err != nil {
		return backends.Holder{}, unavailable(ctx, "holder", err)
	}
	start := time.Now()
	key := b.keys(name).lock
	pipe := b.client.Pipeline()
	get, lockTTL := pipe.Get(ctx, key), pipe.PTTL(ctx, key)
	_, _ = pipe.Exec(ctx) // the commands' own errors say it
	raw, err := get.Result()
	if err == goredis.Nil {
		return backends.Holder{}, nil
	}
	if err != nil {
		return backends.Holder{}, unavailable(ctx, "holder", err)
	}
	v, err := parseValue(raw)
	if err != nil {
		return backends.Holder{}, unavailable(ctx, "holder", err)
	}
	ttl := lockTTL.Val()
	h := backends.Holder{ID: v.id(), Token: v.token}
	if !v.held {
		sttl, err := b.client.PTTL(ctx, b.sessionKey(v.sid)).Result()
		if err != nil {
			return backends.Holder{}, unavailable(ctx, "holder", err)
		}
		if sttl == -2 {
			return backends.Holder{}, nil // its session expired
		}
		if sttl > 0 && (ttl <= 0 || sttl < ttl) {
			ttl = sttl
		}
		h.Session = v.sid
	}
	if ttl > 0 {
		h.Expires = start.Add(ttl)
	}
	return h, nil
}

// lockKeys are the names of one lock's keys and channel. They share the
// hash tag {name}, so a script may touch them together on a Cluster.
type lockKeys struct {
	lock    string // the holder: "<token> s|h <session ID>"
	fence   string // the fencing counter; never deleted
	wanted  string // set by a try that found the lock held; its release deletes it
	channel string // PUBLISHed to when the lock is taken or released
	wake    string // PUBLISHed to when the lock is released while wanted
}

// tagEscaper keeps a name's hash tag whole ('}' would end it) and keys
// distinct for distinct names.
var tagEscaper = strings.NewReplacer("%", "%25", "}", "%7D")

func (b *Backend) keys(name string) lockKeys {
	base := b.prefix + ":" + HashTag(name) + ":"
	// One allocation for the five: each key is a slice of it.
	all := base + "lock" + base + "fence" + base + "wanted" + base + "released" + base + "wake"
	var k lockKeys
	cut := func(suffix string) string {
		key := all[:len(base)+len(suffix)]
		all = all[len(key):]
		return key
	}
	k.lock, k.fence, k.wanted, k.channel, k.wake = cut("lock"), cut("fence"), cut("wanted"), cut("released"), cut("wake")
	return k
}

// sessionPrefix is what starts every session key, for the acquire script
// to check a holder's on a single server; "" through a Cluster, where a
// script may not read it.
func (b *Backend) sessionPrefix() string {
	if !b.oneServer {
		return ""
	}
	return b.sessionKey("")
}

// sessionKey is the key of session sid; it is in a slot of its own.
func (b *Backend) sessionKey(sid string) string {
	return b.prefix + ":session:" + sid
}
