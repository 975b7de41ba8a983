// Package redisdial registers the URL scheme redis:// with package dial,
// so that dial.Open opens a Redis backend (package backends/redis) on a
// go-redis client of its own. Import it for its side effect:
//
//	import _ "github.com/hustings/hustings/backends/redis/redisdial"
//
// The URL names one server (or a proxy) and a database number, default 0:
//
//	redis://host:port[/db]
//
// User info, queries and fragments are bad URLs: a program that needs a
// password, TLS or pool sizes builds its client and calls redis.New.
// Open pings the server once. The client has ContextTimeoutEnabled (so
// that a call's context interrupts a blocked read) and go-redis's default
// dialer (a 5-minute TCP keep-alive).
//
// go-redis has one logger per process (redis.SetLogger). The first Open
// installs, once, a logger that sends the lines about its clients (their
// failed dials, and what is logged during their calls) to the logger of
// the Open that made the client (dial.WithLogger), and every other line
// where go-redis would have sent it (stderr). A program that calls
// redis.SetLogger after Open replaces it and gets every line.
package redisdial

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/dial"
	"github.com/hustings/hustings/backends/redis"
)

// The errors of Register are recorded by dial, which refuses the scheme
// at Parse: nothing to do with them here.
func init() { _ = dial.Register("redis", opener{}) }

// opener opens redis:// URLs.
type opener struct{}

func (opener) Usage(string) string { return "redis://host:port[/db]" }

func (opener) Check(u *url.URL) error {
	_, err := describe(u)
	return err
}

func (opener) Describe(u *url.URL) (dial.Target, error) { return describe(u) }

func describe(u *url.URL) (dial.Target, error) {
	hs, err := dial.HostsOf(u)
	if err != nil {
		return dial.Target{}, err
	}
	if len(hs) != 1 {
		return dial.Target{}, fmt.Errorf("redis takes one host:port, not %d", len(hs))
	}
	t := dial.Target{Scheme: "redis", Hosts: hs}
	if p := strings.TrimPrefix(strings.TrimRight(u.Path, "/"), "/"); p != "" {
		if t.DB, err = strconv.Atoi(p); err != nil || t.DB < 0 {
			return dial.Target{}, fmt.Errorf("database %q is not a number from 0 up", p)
		}
	}
	return t, nil
}

func (opener) Open(ctx context.Context, u *url.URL, c dial.Config) (backends.Backend, func(), error) {
	t, err := describe(u)
	if err != nil {
		return nil, nil, fmt.Errorf("%w %q: %v", dial.ErrURL, u.Redacted(), err)
	}
	routeLogs()
	// The dialer's errors are marked with the logger, for the router:
	// go-redis dials in the background, with a context of its own.
	d := &dial.Dialer{Dialer: net.Dialer{Timeout: c.Timeout, KeepAlive: 5 * time.Minute}}
	dialFn := func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, markedError{err: err, l: c.Logger}
		}
		return conn, nil
	}
	rdb := goredis.NewClient(&goredis.Options{Addr: t.Hosts[0], DB: t.DB, ContextTimeoutEnabled: true, DialTimeout: c.Timeout, Dialer: dialFn})
	rdb.AddHook(hook{l: c.Logger})
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		if rerr := goredis.Error(nil); errors.As(err, &rerr) { // the server answered, with an error
			return nil, nil, fmt.Errorf("dial: %s: %w", u.Redacted(), err)
		}
		return nil, nil, dial.Unreachable(ctx, c, u.Redacted(), d.LastErr(), err)
	}
	b, err := redis.New(rdb)
	if err != nil {
		rdb.Close()
		return nil, nil, err
	}
	return b, func() { rdb.Close() }, nil
}
