package dial

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/nats"
)

// openNATS connects to the servers, waits for JetStream's answer, and
// runs nats.CreateBucket (idempotent): the bucket is made on first use.
// The connection reconnects forever, and pings every 2 s so that a dead
// link is noticed within about 6 s; its asynchronous errors and
// reconnections go to the logger.
func (t Target) openNATS(ctx context.Context, cfg config) (backends.Backend, func(), error) {
	servers := make([]string, len(t.Hosts))
	for i, h := range t.Hosts {
		servers[i] = "nats://" + h
	}
	log := func(msg string, err error) { cfg.logger.Debug(msg, "client", "nats", "err", err) }
	d := &natsDialer{dialer{d: net.Dialer{Timeout: cfg.timeout}}}
	nc, err := natsgo.Connect(strings.Join(servers, ","),
		natsgo.SetCustomDialer(d),
		natsgo.Timeout(cfg.timeout),
		natsgo.MaxReconnects(-1),
		natsgo.ReconnectWait(250*time.Millisecond),
		natsgo.PingInterval(2*time.Second),
		natsgo.MaxPingsOutstanding(2),
		natsgo.ErrorHandler(func(_ *natsgo.Conn, _ *natsgo.Subscription, err error) { log("async error", err) }),
		natsgo.DisconnectErrHandler(func(_ *natsgo.Conn, err error) { log("disconnected", err) }),
		natsgo.ReconnectHandler(func(*natsgo.Conn) { log("reconnected", nil) }),
	)
	if err != nil {
		if last := d.lastErr(); last != nil {
			err = last // what "no servers available" hides
		}
		return nil, nil, t.unreachable(ctx, cfg, nil, err)
	}
	js, err := jetstream.New(nc)
	if err == nil {
		_, err = js.AccountInfo(ctx)
	}
	if err != nil {
		nc.Close()
		if ctx.Err() != nil {
			return nil, nil, t.unreachable(ctx, cfg, nil, err)
		}
		return nil, nil, fmt.Errorf("dial: %s: JetStream: %w", t, err)
	}
	var opts []nats.Option
	if t.Bucket != "" {
		opts = append(opts, nats.WithBucket(t.Bucket))
	}
	if err := nats.CreateBucket(ctx, js, opts...); err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("dial: %s: %w", t, err)
	}
	b, err := nats.New(js, opts...)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return b, nc.Close, nil
}

// natsDialer is a dialer as nats.go takes one (no context: the
// connection's Timeout bounds it), remembering its last error: nats.go
// reports a refused dial only as "no servers available".
type natsDialer struct{ dialer }

func (d *natsDialer) Dial(network, addr string) (net.Conn, error) {
	return d.DialContext(context.Background(), network, addr)
}
