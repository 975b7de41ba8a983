// Package dial opens a backend from a URL, for programs that take their
// backend as a flag or an environment variable:
//
//	memory                              a new in-process backend (one process only)
//	redis://host:port[/db]              one Redis server (or a proxy)
//	etcd://host:port[,host:port…]       an etcd cluster
//	zk://host:port[,host:port…][/root]  a ZooKeeper ensemble, under root
//	postgres://[user[:password]@]host:port/db[?param=value…]
//	                                    a PostgreSQL database (postgresql:// too)
//	mysql://user[:password]@host:port/db[?param=value…]
//	                                    a MySQL or MariaDB database (mariadb:// too);
//	                                    params are go-sql-driver/mysql's
//	nats://host:port[,host:port…][/bucket]
//	                                    a NATS server or cluster with JetStream, its KV bucket
//
// Schemes are case-insensitive, as in any URL, and "memory://" is memory
// too. Parse checks a URL without connecting; every error it returns
// matches ErrURL and names the wrong part.
//
// Open connects, waits until the server answers (at most the dial timeout,
// WithTimeout, default 5 s), and returns the backend with a function that
// closes the client it made. If the server does not answer in time, Open
// fails with one line naming the URL and the cause, matching
// ErrUnreachable. The clients' own log lines go to WithLogger's logger at
// debug level (by default nowhere), never to stderr; see WithLogger for
// go-redis, whose logger is one per process. Programs that build their own
// clients (TLS, auth, pool sizes) should call the backend packages' New
// instead.
//
// Other schemes are registered (see Register) by the packages that
// implement them, when a program imports them.
//
// Kubernetes Leases open by k8s:// and kubernetes:// once a program
// imports backends/kubernetes/k8sdial, which registers them; this package
// does not import client-go.
package dial

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-sql-driver/mysql"
	"github.com/go-zookeeper/zk"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/nats"
	"github.com/hustings/hustings/backends/zookeeper"
)

var (
	// ErrURL is matched by every error about a malformed backend URL.
	ErrURL = errors.New("dial: bad backend URL")
	// ErrUnreachable is matched by the errors of Open when the server did
	// not answer within the dial timeout (or before ctx ended).
	ErrUnreachable = errors.New("dial: cannot reach")
)

// Usage lists the built-in URLs, for help texts; Schemes lists the
// registered ones.
const Usage = "memory | redis://host:port[/db] | etcd://host:port[,host:port…] | zk://host:port[,host:port…][/root] | postgres://[user@]host:port/db | mysql://user@host:port/db | nats://host:port[,host:port…][/bucket]"

// ZooKeeperSessionTimeout is the session timeout Open asks ZooKeeper for;
// campaign TTLs must not exceed it.
const ZooKeeperSessionTimeout = 4 * time.Second

// maxHostLen is the longest host name Parse takes: the longest DNS name.
const maxHostLen = 253

// Target is a parsed backend URL.
type Target struct {
	// Scheme is "memory", "redis", "etcd", "zk", "postgres" (for
	// postgresql:// too), "mysql" (for mariadb:// too) or "nats".
	Scheme string
	// Hosts are the servers, host:port each; one for Redis, none for memory.
	Hosts []string
	// DB is the Redis database number.
	DB int
	// Root is the ZooKeeper path under which locks live; empty for the
	// backend's default.
	Root string
	// Bucket is the NATS KV bucket; empty for the backend's default.
	Bucket string
	// DSN is the whole PostgreSQL URL, user, password and parameters
	// included, as pgx takes it; for MySQL, the mysql:// URL.
	DSN string

	raw    string // the URL of a registered scheme, as given
	opener Opener // the registered scheme's opener; nil for a built-in one
}

// Parse checks raw and returns what it names, without connecting.
func Parse(raw string) (Target, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w %s: %s", ErrURL, shown(raw), fmt.Sprintf(format, args...))
	}
	if raw == "" {
		return Target{}, fmt.Errorf("%w: empty: write memory (this process only), redis://host:port[/db], etcd://host:port[,host:port…] or zk://host:port[,host:port…][/root]", ErrURL)
	}
	if strings.EqualFold(raw, "memory") {
		return Target{Scheme: "memory"}, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // without the URL, which would show a password
		}
		return Target{}, bad("%v", err)
	}
	if o, err := opener(u.Scheme); err != nil {
		return Target{}, err
	} else if o != nil {
		if err := o.Check(u); err != nil {
			return Target{}, bad("%v", err)
		}
		return Target{Scheme: u.Scheme, raw: raw, opener: o}, nil
	}
	switch u.Scheme {
	case "memory":
		if u.Host != "" || u.Path != "" || u.Opaque != "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return Target{}, bad("the memory backend takes no host, path or options: write memory")
		}
		return Target{Scheme: "memory"}, nil
	case "redis", "etcd", "zk", "nats":
	case "postgres", "postgresql":
		return parsePostgres(raw, u.Scheme, bad)
	case "mysql", "mariadb":
		return parseMySQL(u, bad)
	case "":
		return Target{}, bad("no scheme: write memory, or redis://, etcd:// or zk:// and host:port")
	default:
		return Target{}, bad("scheme %q is not one of %s", u.Scheme, strings.Join(append([]string{"memory", "redis", "etcd", "zk", "postgres", "mysql", "nats"}, Schemes()...), ", "))
	}
	switch {
	case u.Opaque != "":
		return Target{}, bad("no // after %q: write %s://host:port", u.Scheme+":", u.Scheme)
	case u.User != nil:
		return Target{}, bad("user info is not supported (build the client yourself and call the backend's New)")
	case u.RawQuery != "" || u.ForceQuery:
		return Target{}, bad("queries are not supported")
	case u.Fragment != "":
		return Target{}, bad("fragments are not supported")
	}
	t := Target{Scheme: u.Scheme}
	if t.Hosts, err = hosts(u.Host); err != nil {
		return Target{}, bad("%v", err)
	}
	path := strings.TrimRight(u.Path, "/")
	switch u.Scheme {
	case "redis":
		if len(t.Hosts) != 1 {
			return Target{}, bad("redis takes one host:port, not %d", len(t.Hosts))
		}
		if p := strings.TrimPrefix(path, "/"); p != "" {
			if t.DB, err = strconv.Atoi(p); err != nil || t.DB < 0 {
				return Target{}, bad("database %s is not a number from 0 up", shown(p))
			}
		}
	case "etcd":
		if path != "" {
			return Target{}, bad("etcd takes no path (got %s)", shown(u.Path))
		}
	case "zk":
		if path != "" {
			if err := checkRoot(path); err != nil {
				return Target{}, bad("%v", err)
			}
		}
		t.Root = path
	case "nats":
		if t.Bucket = strings.TrimPrefix(path, "/"); t.Bucket != "" {
			if _, err := nats.New(nil, nats.WithBucket(t.Bucket)); err != nil && strings.Contains(err.Error(), "bucket") {
				return Target{}, bad("bucket %s: 1 to 64 letters, digits, '-' or '_'", shown(t.Bucket))
			}
		}
	}
	return t, nil
}

// parsePostgres checks a PostgreSQL URL the way pgx reads it (user,
// password and parameters such as sslmode included), without connecting.
// It must name a host and a port.
func parsePostgres(raw, scheme string, bad func(string, ...any) error) (Target, error) {
	dsn := scheme + raw[len(scheme):] // pgx wants the scheme in lower case
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		msg := err.Error()
		if inner := errors.Unwrap(err); inner != nil {
			msg = inner.Error() // without the URL
		}
		msg = strings.ReplaceAll(msg, "\n", " ")
		if len(msg) > 200 {
			msg = msg[:200] + "…"
		}
		return Target{}, bad("not a PostgreSQL URL: %s", strings.ToValidUTF8(msg, "?"))
	}
	host := cfg.ConnConfig.Host
	if host == "" || strings.HasPrefix(host, "/") {
		return Target{}, bad("no host:port (a Unix socket is not supported here)")
	}
	t := Target{Scheme: "postgres", Hosts: []string{net.JoinHostPort(host, strconv.Itoa(int(cfg.ConnConfig.Port)))}, DSN: dsn}
	for _, f := range cfg.ConnConfig.Fallbacks { // with and without TLS: one host twice
		if h := net.JoinHostPort(f.Host, strconv.Itoa(int(f.Port))); !slices.Contains(t.Hosts, h) {
			t.Hosts = append(t.Hosts, h)
		}
	}
	return t, nil
}

// parseMySQL checks a mysql:// URL: a user, one host:port, a database,
// and parameters that go-sql-driver/mysql takes.
func parseMySQL(u *url.URL, bad func(string, ...any) error) (Target, error) {
	switch {
	case u.Opaque != "":
		return Target{}, bad("no // after %q: write mysql://user@host:port/db", u.Scheme+":")
	case u.User == nil || u.User.Username() == "":
		return Target{}, bad("no user: write mysql://user[:password]@host:port/db")
	case strings.Trim(u.Path, "/") == "" || strings.Contains(strings.Trim(u.Path, "/"), "/"):
		return Target{}, bad("no database: write mysql://user@host:port/db")
	case u.Fragment != "":
		return Target{}, bad("fragments are not supported")
	}
	hs, err := hosts(u.Host)
	if err != nil {
		return Target{}, bad("%v", err)
	}
	if len(hs) != 1 {
		return Target{}, bad("one host:port only")
	}
	t := Target{Scheme: "mysql", Hosts: hs}
	u.Scheme = "mysql"
	t.DSN = u.String()
	if _, err := t.mysqlConfig(); err != nil {
		return Target{}, bad("%v", err)
	}
	return t, nil
}

// mysqlConfig returns the go-sql-driver/mysql configuration of a mysql
// target, with parseTime on.
func (t Target) mysqlConfig() (*mysql.Config, error) {
	u, err := url.Parse(t.DSN)
	if err != nil {
		return nil, err
	}
	dsn := u.User.Username()
	if pw, ok := u.User.Password(); ok {
		dsn += ":" + pw
	}
	dsn += "@tcp(" + u.Host + ")/" + strings.Trim(u.Path, "/")
	if u.RawQuery != "" {
		dsn += "?" + u.RawQuery
	}
	c, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, errors.New("not a MySQL URL: " + strings.ReplaceAll(err.Error(), dsn, "…"))
	}
	c.ParseTime = true
	return c, nil
}

// hosts checks a comma-separated host:port list.
func hosts(list string) ([]string, error) {
	if list == "" {
		return nil, errors.New("no host:port")
	}
	hs := strings.Split(list, ",")
	for _, h := range hs {
		host, port, err := net.SplitHostPort(h)
		switch {
		case err != nil:
			return nil, fmt.Errorf("%s is not host:port", shown(h))
		case host == "":
			return nil, fmt.Errorf("%s has no host", shown(h))
		case len(host) > maxHostLen:
			return nil, fmt.Errorf("host name is %d bytes, longer than %d", len(host), maxHostLen)
		}
		if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
			return nil, fmt.Errorf("port %s is not a number from 1 to 65535", shown(port))
		}
	}
	return hs, nil
}

// checkRoot asks package zookeeper whether it takes root: New does no I/O
// and checks its root before anything touches the conn.
func checkRoot(root string) error {
	_, err := zookeeper.New(new(zk.Conn), zookeeper.WithRoot(root))
	if err == nil {
		return nil
	}
	msg := strings.TrimPrefix(err.Error(), backends.ErrInvalid.Error()+": ")
	return errors.New(strings.TrimPrefix(msg, "zookeeper: "))
}

// shown quotes s for an error message: user info (which may hold a
// password) elided, and at most 80 bytes.
func shown(s string) string {
	if i := strings.Index(s, "://"); i >= 0 {
		auth := s[i+3:]
		if j := strings.IndexAny(auth, "/?#"); j >= 0 {
			auth = auth[:j]
		}
		if at := strings.LastIndex(auth, "@"); at >= 0 {
			s = s[:i+3] + "…@" + s[i+3+at+1:]
		}
	}
	const limit = 80
	if len(s) > limit {
		cut := limit
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		return fmt.Sprintf("%q… (%d bytes)", s[:cut], len(s))
	}
	return strconv.Quote(s)
}

// Redacted returns String with a password replaced by "xxxxx", for
// messages.
func (t Target) Redacted() string {
	if u, err := url.Parse(t.String()); err == nil {
		return u.Redacted()
	}
	return t.String()
}

// String returns the target as a URL that Parse accepts.
func (t Target) String() string {
	if t.opener != nil {
		return t.raw // with its password, if any: see Redacted
	}
	switch t.Scheme {
	case "memory":
		return "memory"
	case "redis":
		return fmt.Sprintf("redis://%s/%d", strings.Join(t.Hosts, ","), t.DB)
	case "postgres", "mysql":
		return t.DSN // with its password, if any: see Redacted
	}
	path := t.Root
	if t.Bucket != "" {
		path = "/" + t.Bucket
	}
	u := url.URL{Scheme: t.Scheme, Host: strings.Join(t.Hosts, ","), Path: path}
	return u.String()
}
