package zookeeper

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/internal/validate"
)

var (
	_ backends.Backend  = (*Backend)(nil)
	_ backends.Session  = (*session)(nil)
	_ backends.Dequeuer = (*session)(nil)
)

// Defaults of the options.
const (
	// DefaultRoot is the node under which the Backend keeps its sessions
	// and locks.
	DefaultRoot = "/hustings"
	// DefaultSessionTimeout is the ZooKeeper session timeout assumed when
	// WithSessionTimeout is not given: the smallest one a server with the
	// default tickTime (2 s) grants.
	DefaultSessionTimeout = 4 * time.Second
)

// Option configures a Backend.
type Option interface {
	apply(*Backend)
}

type optionFunc func(*Backend)

func (f optionFunc) apply(b *Backend) { f(b) }

// WithRoot sets the node under which the Backend keeps its sessions
// (root/sessions), locks (root/locks) and registry (root/groups). Backends
// that share a root share their locks and registry. It must be an absolute
// ZooKeeper path without a trailing slash, outside /zookeeper. Default
// "/hustings". The root and its children are created when first needed.
func WithRoot(root string) Option { return optionFunc(func(b *Backend) { b.root = root }) }

// WithSessionTimeout tells the Backend the session timeout of its conn:
// the timeout given to zk.Connect, which the server keeps if it lies
// within its minSessionTimeout and maxSessionTimeout (by default 2 and 20
// ticks: 4 s to 40 s). go-zookeeper does not report the timeout it
// negotiated, so the Backend trusts this value: Open rejects TTLs longer
// than it, because the server deletes every lock of the conn one session
// timeout after it last heard from it. Default 4s.
func WithSessionTimeout(d time.Duration) Option {
	return optionFunc(func(b *Backend) { b.sessionTimeout = d })
}

// Backend is a store of named locks in ZooKeeper, on the caller's
// connection. Create it with New. It is safe for concurrent use.
type Backend struct {
	conn           *zk.Conn
	root           string
	sessionTimeout time.Duration
	acl            []zk.ACL

	mu     sync.Mutex
	queues map[string]*queueState // lock name → what is known of its queue; guarded by mu
	clock  serverClock            // the newest sample of the server's clock
	seen   seen                   // holders judged alive, and their sessions

	judgeEvery  time.Duration     // see walk; judgeEvery unless a test sets it
	grantSettle time.Duration     // see watchLosses; grantSettle unless a test sets it
	onCall      func(what string) // set by tests before any call, to count requests
}

// New returns a Backend that keeps its locks under the root (see WithRoot)
// on conn. It does no I/O and starts no goroutine. The caller keeps
// ownership of conn: the Backend never closes it, and the conn must outlive
// the Backend's sessions. It returns an error matching backends.ErrInvalid
// for a nil conn, a bad root or a session timeout ≤ 0.
func New(conn *zk.Conn, opts ...Option) (*Backend, error) {
	b := &Backend{
		conn:           conn,
		root:           DefaultRoot,
		sessionTimeout: DefaultSessionTimeout,
		acl:            zk.WorldACL(zk.PermAll),
		queues:         make(map[string]*queueState),
		judgeEvery:     judgeEvery,
		grantSettle:    grantSettle,
	}
	for _, o := range opts {
		if o != nil {
			o.apply(b)
		}
	}
	switch {
	case conn == nil:
		return nil, fmt.Errorf("%w: zookeeper: nil conn", backends.ErrInvalid)
	case b.sessionTimeout <= 0:
		return nil, fmt.Errorf("%w: zookeeper: session timeout %v must be > 0", backends.ErrInvalid, b.sessionTimeout)
	}
	if err := validRoot(b.root); err != nil {
		return nil, err
	}
	return b, nil
}

// validRoot checks that root is an absolute path of plain segments.
func validRoot(root string) error {
	bad := func(why string) error {
		return fmt.Errorf("%w: zookeeper: root %q %s", backends.ErrInvalid, root, why)
	}
	switch {
	case !strings.HasPrefix(root, "/") || root == "/":
		return bad("must start with / and name a node")
	case strings.HasSuffix(root, "/"):
		return bad("must not end with /")
	case root == "/zookeeper" || strings.HasPrefix(root, "/zookeeper/"):
		return bad("is inside /zookeeper, which the server reserves")
	}
	for _, seg := range strings.Split(root[1:], "/") {
		if seg == "" || seg == "." || seg == ".." {
			return bad(fmt.Sprintf("has the segment %q", seg))
		}
		if i := strings.IndexFunc(seg, forbidden); i >= 0 {
			return bad(fmt.Sprintf("has %q, which ZooKeeper paths cannot hold", []rune(seg[i:])[0]))
		}
	}
	return nil
}

// forbidden reports whether ZooKeeper paths cannot hold r.
func forbidden(r rune) bool {
	return r < 0x20 || (r >= 0x7f && r <= 0x9f) || (r >= 0xd800 && r <= 0xf8ff) || r >= 0xfff0 && r <= 0xffff
}

// Holder reports who holds the lock name: the candidate of the oldest
// child whose session and lease are alive, or the releasing candidate while
// a hold lasts. On the way it deletes the nodes it finds dead (expired
// sessions, leases and holds).
func (b *Backend) Holder(ctx context.Context, name string) (backends.Holder, error) {
	if err := validate.Name(name); err != nil {
		return backends.Holder{}, err
	}
	v, err := b.look(ctx, name, nil)
	if err != nil {
		return backends.Holder{}, err
	}
	return v.holder, nil
}

// sessionsPath is the parent of the session nodes.
func (b *Backend) sessionsPath() string { return b.root + "/sessions" }

// lockPath is the parent node of the lock name.
func (b *Backend) lockPath(name string) string { return b.root + "/locks/" + encodeName(name) }

// groupPath is the parent node of the registry entries of group.
func (b *Backend) groupPath(group string) string { return b.root + "/groups/" + encodeName(group) }
