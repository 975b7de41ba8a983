// Package dial opens a backend from a URL, for programs that take their
// backend as a flag or an environment variable:
//
//	memory                         a new in-process backend
//	redis://host:port[/db]         one Redis server (or a proxy)
//	etcd://host:port[,host:port…]  an etcd cluster
//	zk://host:port[,host:port…][/root]  a ZooKeeper ensemble, under root
//
// Open connects and returns the backend with a function that closes the
// client it made. Programs that build their own clients (TLS, auth, pool
// sizes) should call the backend packages' New instead. Parse checks a URL
// without connecting; every error it returns matches ErrURL and names the
// wrong part.
package dial

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hustings/hustings/backends"
)

// ErrURL is matched by every error about a malformed backend URL.
var ErrURL = errors.New("dial: bad backend URL")

// Usage lists the accepted URLs, for help texts.
const Usage = "memory | redis://host:port[/db] | etcd://host:port[,host:port…] | zk://host:port[,host:port…][/root]"

// ZooKeeperSessionTimeout is the session timeout Open asks ZooKeeper for;
// campaign TTLs must not exceed it.
const ZooKeeperSessionTimeout = 4 * time.Second

// Target is a parsed backend URL.
type Target struct {
	// Scheme is "memory", "redis", "etcd" or "zk".
	Scheme string
	// Hosts are the servers, host:port each; one for Redis, none for memory.
	Hosts []string
	// DB is the Redis database number.
	DB int
	// Root is the ZooKeeper path under which locks live; empty for the
	// backend's default.
	Root string
}

// Parse checks raw and returns what it names, without connecting.
func Parse(raw string) (Target, error) {
	if raw == "" || raw == "memory" {
		return Target{Scheme: "memory"}, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return Target{}, fmt.Errorf("%w %q: %v", ErrURL, raw, err)
	}
	switch u.Scheme {
	case "redis", "etcd", "zk":
	default:
		return Target{}, fmt.Errorf("%w %q: scheme %q is not one of memory, redis, etcd, zk", ErrURL, u.Redacted(), u.Scheme)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return Target{}, fmt.Errorf("%w %q: user info, queries and fragments are not supported", ErrURL, u.Redacted())
	}
	t := Target{Scheme: u.Scheme}
	if t.Hosts, err = hosts(u); err != nil {
		return Target{}, err
	}
	path := strings.TrimRight(u.Path, "/")
	switch u.Scheme {
	case "redis":
		if len(t.Hosts) != 1 {
			return Target{}, fmt.Errorf("%w %q: redis takes one host:port", ErrURL, u.Redacted())
		}
		if p := strings.TrimPrefix(path, "/"); p != "" {
			if t.DB, err = strconv.Atoi(p); err != nil || t.DB < 0 {
				return Target{}, fmt.Errorf("%w %q: database %q is not a number", ErrURL, u.Redacted(), p)
			}
		}
	case "etcd":
		if path != "" {
			return Target{}, fmt.Errorf("%w %q: etcd takes no path", ErrURL, u.Redacted())
		}
	case "zk":
		t.Root = path
	}
	return t, nil
}

// hosts checks a comma-separated host:port list.
func hosts(u *url.URL) ([]string, error) {
	if u.Host == "" {
		return nil, fmt.Errorf("%w %q: no host:port", ErrURL, u.Redacted())
	}
	list := strings.Split(u.Host, ",")
	for _, h := range list {
		host, port, err := net.SplitHostPort(h)
		if err != nil || host == "" {
			return nil, fmt.Errorf("%w %q: %q is not host:port", ErrURL, u.Redacted(), h)
		}
		if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
			return nil, fmt.Errorf("%w %q: port %q is not a number from 1 to 65535", ErrURL, u.Redacted(), port)
		}
	}
	return list, nil
}

// String returns the target as a URL that Parse accepts.
func (t Target) String() string {
	switch t.Scheme {
	case "memory":
		return "memory"
	case "redis":
		return fmt.Sprintf("redis://%s/%d", strings.Join(t.Hosts, ","), t.DB)
	}
	return t.Scheme + "://" + strings.Join(t.Hosts, ",") + t.Root
}

// Open parses raw and connects; see Target.Open.
func Open(ctx context.Context, raw string) (b backends.Backend, close func(), err error) {
	t, err := Parse(raw)
	if err != nil {
		return nil, nil, err
	}
	return t.Open(ctx)
}
