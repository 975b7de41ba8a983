package consul

import (
	"fmt"
	"strings"
	"sync"

	"github.com/hashicorp/consul/api"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/internal/record"
)

var (
	_ backends.Backend        = (*Backend)(nil)
	_ backends.ReleaseWatcher = (*Backend)(nil)
)

// DefaultPrefix is the KV prefix the backend keeps its records under
// unless WithPrefix says otherwise.
const DefaultPrefix = "hustings/"

// Option configures a Backend.
type Option interface {
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	prefix string
}

// WithPrefix keeps the records under the KV prefix p, which must end in
// '/' and not start with one. Default DefaultPrefix. Backends that share
// a prefix share their locks.
func WithPrefix(p string) Option { return optionFunc(func(c *config) { c.prefix = p }) }

// Backend keeps locks in Consul's KV store, tied to Consul sessions.
// Create it with New; the zero value is not usable. It is safe for
// concurrent use.
type Backend struct {
	*record.Store
	d *driver
}

// New returns a Backend on c. It does no I/O, starts no goroutine, and
// never closes anything of c's; after the last call and the last watch,
// Wait waits for the goroutines the watches started. A nil or typed-nil
// c, or a bad option, returns an error matching backends.ErrInvalid.
func New(c *api.Client, opts ...Option) (*Backend, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: consul: nil client", backends.ErrInvalid)
	}
	cfg := config{prefix: DefaultPrefix}
	for _, o := range opts {
		if o != nil {
			o.apply(&cfg)
		}
	}
	if p := cfg.prefix; p == "" || !strings.HasSuffix(p, "/") || strings.HasPrefix(p, "/") || strings.Contains(p, "//") {
		return nil, fmt.Errorf("%w: consul: prefix %q: want a non-empty key prefix ending in '/', not starting with one", backends.ErrInvalid, p)
	}
	d := &driver{c: c, prefix: cfg.prefix, ids: map[string]opened{}}
	s, err := record.New(d, record.Config{Name: "consul"})
	if err != nil {
		return nil, err
	}
	return &Backend{Store: s, d: d}, nil
}

// LockKey returns the KV key of lock name's record, for operators and
// tools: `consul kv get -detailed <key>` shows its holder, and deleting
// it takes the lock from its holder (who is told).
func (b *Backend) LockKey(name string) string { return b.d.lockKey(name) }

// driver is the record.Driver of the backend: sessions are Consul
// sessions, each with a KV key it holds; locks and registry entries are
// KV keys written by transactions conditioned on their ModifyIndex.
type driver struct {
	c      *api.Client
	prefix string

	mu  sync.Mutex
	ids map[string]opened // by the core's session ID
}

// opened is a session this driver opened and has not closed.
type opened struct {
	id        string // Consul's session ID
	candidate string
}

// Key families under the prefix.
const (
	sessionDir = "session/"
	lockDir    = "lock/"
	memberDir  = "member/"
)

// escape turns a name into one key segment: '%' and '/' are escaped as
// in a URL path (the key keeps every other byte), so that no name is a
// prefix of another's key family.
func escape(name string) string {
	return strings.NewReplacer("%", "%25", "/", "%2F").Replace(name)
}

// unescape undoes escape.
func unescape(seg string) string {
	return strings.NewReplacer("%2F", "/", "%25", "%").Replace(seg)
}

func (d *driver) lockKey(name string) string         { return d.prefix + lockDir + escape(name) }
func (d *driver) sessionKey(sid string) string       { return d.prefix + sessionDir + sid }
func (d *driver) memberDir(group string) string      { return d.prefix + memberDir + escape(group) + "/" }
func (d *driver) memberKey(group, sid string) string { return d.memberDir(group) + sid }

// consulID returns the Consul session of the core's session sid, if this
// driver opened it and has not closed it.
func (d *driver) consulID(sid string) (string, bool) {
	o, ok := d.opened(sid)
	return o.id, ok
}

func (d *driver) opened(sid string) (opened, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	o, ok := d.ids[sid]
	return o, ok
}
