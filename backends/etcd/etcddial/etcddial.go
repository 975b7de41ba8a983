// Package etcddial registers the URL scheme etcd:// with package dial, so
// that dial.Open opens an etcd backend (package backends/etcd) on a client
// of its own. Import it for its side effect:
//
//	import _ "github.com/hustings/hustings/backends/etcd/etcddial"
//
// The URL names the cluster's endpoints, and nothing else:
//
//	etcd://host:port[,host:port…]
//
// User info, a path, queries and fragments are bad URLs: a program that
// needs TLS or auth builds its client and calls etcd.New. Open makes one
// linearizable read, so it returns once the cluster answers and has a
// leader; the client does not depend on Open's ctx after that. Its zap
// log lines go to dial.WithLogger's logger at debug level, with the zap
// level and fields as attributes.
package etcddial

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/dial"
	"github.com/hustings/hustings/backends/etcd"
)

// The errors of Register are recorded by dial, which refuses the scheme
// at Parse: nothing to do with them here.
func init() { _ = dial.Register("etcd", opener{}) }

// opener opens etcd:// URLs.
type opener struct{}

func (opener) Usage(string) string { return "etcd://host:port[,host:port…]" }

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
	if strings.TrimRight(u.Path, "/") != "" {
		return dial.Target{}, fmt.Errorf("etcd takes no path (got %q)", u.Path)
	}
	return dial.Target{Scheme: "etcd", Hosts: hs}, nil
}

func (opener) Open(ctx context.Context, u *url.URL, c dial.Config) (backends.Backend, func(), error) {
	t, err := describe(u)
	if err != nil {
		return nil, nil, fmt.Errorf("%w %q: %v", dial.ErrURL, u.Redacted(), err)
	}
	d := &dial.Dialer{}
	// No Context in the config: the client must outlive Open's ctx.
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   t.Hosts,
		DialTimeout: c.Timeout,
		Logger:      zapLogger(c.Logger),
		DialOptions: []grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return d.DialContext(ctx, "tcp", addr)
		})},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("dial: %s: %w", u.Redacted(), err)
	}
	// A linearizable read: the cluster answers and has a leader.
	if _, err := cli.Get(ctx, "hustings-dial-check", clientv3.WithCountOnly()); err != nil {
		cli.Close()
		if code := status.Code(err); ctx.Err() != nil && (code == codes.DeadlineExceeded || code == codes.Canceled) {
			err = ctx.Err() // the gRPC status of the context's end says no more
		}
		return nil, nil, dial.Unreachable(ctx, c, u.Redacted(), d.LastErr(), err)
	}
	b, err := etcd.New(cli)
	if err != nil {
		cli.Close()
		return nil, nil, err
	}
	return b, func() { cli.Close() }, nil
}
