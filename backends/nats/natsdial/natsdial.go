// Package natsdial registers the URL scheme nats:// with package dial, so
// that dial.Open opens a NATS backend (package backends/nats) on a
// connection of its own. Import it for its side effect:
//
//	import _ "github.com/hustings/hustings/backends/nats/natsdial"
//
// The URL names the servers of a NATS server or cluster with JetStream
// and, as its path, the KV bucket (nats.WithBucket; default the
// backend's):
//
//	nats://host:port[,host:port…][/bucket]
//
// User info, queries and fragments are bad URLs: a program that needs
// credentials or TLS builds its connection and calls nats.New. Open waits
// for JetStream's answer and runs nats.CreateBucket (idempotent): the
// bucket is made on first use. The connection reconnects forever, and
// pings every 2 s so that a dead link is noticed within about 6 s; its
// asynchronous errors and reconnections go to dial.WithLogger's logger at
// debug level.
package natsdial

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/dial"
	"github.com/hustings/hustings/backends/internal/record"
	"github.com/hustings/hustings/backends/nats"
)

// The errors of Register are recorded by dial, which refuses the scheme
// at Parse: nothing to do with them here.
func init() { _ = dial.Register("nats", opener{}) }

// opener opens nats:// URLs.
type opener struct{}

func (opener) Usage(string) string { return "nats://host:port[,host:port…][/bucket]" }

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
	t := dial.Target{Scheme: "nats", Hosts: hs, Bucket: strings.TrimPrefix(strings.TrimRight(u.Path, "/"), "/")}
	if t.Bucket != "" {
		// New checks the bucket's name before it touches the connection.
		if _, err := nats.New(nil, nats.WithBucket(t.Bucket)); err != nil && strings.Contains(err.Error(), "bucket") {
			return dial.Target{}, fmt.Errorf("bucket %q: 1 to 64 letters, digits, '-' or '_'", t.Bucket)
		}
	}
	return t, nil
}

func (opener) Open(ctx context.Context, u *url.URL, c dial.Config) (backends.Backend, func(), error) {
	shown := u.Redacted()
	t, err := describe(u)
	if err != nil {
		return nil, nil, fmt.Errorf("%w %q: %v", dial.ErrURL, shown, err)
	}
	servers := make([]string, len(t.Hosts))
	for i, h := range t.Hosts {
		servers[i] = "nats://" + h
	}
	log := func(msg string, err error) { c.Logger.Debug(msg, "client", "nats", "err", err) }
	// The dialer remembers its last error: nats.go reports a refused dial
	// only as "no servers available".
	d := &dial.Dialer{Dialer: net.Dialer{Timeout: c.Timeout}}
	nc, err := natsgo.Connect(strings.Join(servers, ","),
		natsgo.SetCustomDialer(d),
		natsgo.Timeout(c.Timeout),
		natsgo.MaxReconnects(-1),
		natsgo.ReconnectWait(250*time.Millisecond),
		natsgo.PingInterval(2*time.Second),
		natsgo.MaxPingsOutstanding(2),
		natsgo.ErrorHandler(func(_ *natsgo.Conn, _ *natsgo.Subscription, err error) { log("async error", err) }),
		natsgo.DisconnectErrHandler(func(_ *natsgo.Conn, err error) { log("disconnected", err) }),
		natsgo.ReconnectHandler(func(*natsgo.Conn) { log("reconnected", nil) }),
	)
	if err != nil {
		if last := d.LastErr(); last != nil {
			err = last // what "no servers available" hides
		}
		return nil, nil, dial.Unreachable(ctx, c, shown, nil, err)
	}
	js, err := jetstream.New(nc)
	if err == nil {
		_, err = js.AccountInfo(ctx)
	}
	if err != nil {
		nc.Close()
		if ctx.Err() != nil {
			return nil, nil, dial.Unreachable(ctx, c, shown, nil, err)
		}
		return nil, nil, fmt.Errorf("dial: %s: JetStream: %w", shown, err)
	}
	var opts []nats.Option
	if t.Bucket != "" {
		opts = append(opts, nats.WithBucket(t.Bucket))
	}
	if err := nats.CreateBucket(ctx, js, opts...); err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("dial: %s: %w", shown, err)
	}
	b, err := nats.New(js, opts...)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return b, func() { nc.Close(); record.WaitBounded(b.Store) }, nil
}
