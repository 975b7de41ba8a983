// Package zkdial registers the URL scheme zk:// with package dial, so
// that dial.Open opens a ZooKeeper backend (package backends/zookeeper) on
// a connection of its own. Import it for its side effect:
//
//	import _ "github.com/hustings/hustings/backends/zookeeper/zkdial"
//
// The URL names the ensemble's servers and, as its path, the node under
// which the locks live (zookeeper.WithRoot; default the backend's):
//
//	zk://host:port[,host:port…][/root]
//
// User info, queries and fragments are bad URLs: a program that needs
// auth or ACLs builds its connection and calls zookeeper.New. Open asks
// for a session of SessionTimeout and returns once the ensemble granted
// it. The connection's log lines go to dial.WithLogger's logger at debug
// level.
package zkdial

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/dial"
	"github.com/hustings/hustings/backends/zookeeper"
)

// SessionTimeout is the session timeout Open asks ZooKeeper for;
// campaign TTLs must not exceed it.
const SessionTimeout = 4 * time.Second

// The errors of Register are recorded by dial, which refuses the scheme
// at Parse: nothing to do with them here.
func init() { _ = dial.Register("zk", opener{}) }

// opener opens zk:// URLs.
type opener struct{}

func (opener) Usage(string) string { return "zk://host:port[,host:port…][/root]" }

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
	root := strings.TrimRight(u.Path, "/")
	if root != "" {
		if err := checkRoot(root); err != nil {
			return dial.Target{}, err
		}
	}
	return dial.Target{Scheme: "zk", Hosts: hs, Root: root}, nil
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

func (opener) Open(ctx context.Context, u *url.URL, c dial.Config) (backends.Backend, func(), error) {
	t, err := describe(u)
	if err != nil {
		return nil, nil, fmt.Errorf("%w %q: %v", dial.ErrURL, u.Redacted(), err)
	}
	d := &dial.Dialer{}
	dialFn := func(network, addr string, timeout time.Duration) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		return d.DialContext(ctx, network, addr)
	}
	conn, _, err := zk.Connect(t.Hosts, SessionTimeout, zk.WithLogger(logger{c.Logger}), zk.WithDialer(dialFn))
	if err != nil {
		return nil, nil, fmt.Errorf("dial: %s: %w", u.Redacted(), err)
	}
	// Connect returns before the session exists; one-shot runs need it.
	if err := waitSession(ctx, conn); err != nil {
		conn.Close()
		return nil, nil, dial.Unreachable(ctx, c, u.Redacted(), d.LastErr(), err)
	}
	opts := []zookeeper.Option{zookeeper.WithSessionTimeout(SessionTimeout)}
	if t.Root != "" {
		opts = append(opts, zookeeper.WithRoot(t.Root))
	}
	b, err := zookeeper.New(conn, opts...)
	if err != nil {
		conn.Close()
		return nil, nil, err
	}
	return b, conn.Close, nil
}

// waitSession waits until ctx ends for conn's first session.
func waitSession(ctx context.Context, conn *zk.Conn) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for conn.State() != zk.StateHasSession {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return fmt.Errorf("no session (state %v)", conn.State())
		}
	}
	return nil
}

// logger adapts a logger to go-zookeeper's (zk.WithLogger: one per conn).
type logger struct{ l *slog.Logger }

func (z logger) Printf(format string, args ...any) {
	z.l.Debug(fmt.Sprintf(format, args...), "client", "zookeeper")
}
