package redis

import (
	"context"
	"errors"
	"net"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/hustings/hustings/backends/internal/hub"
	"github.com/hustings/hustings/internal/validate"
)

// watchCheck is how long the watches' connection waits for a message
// before it PINGs Redis; a second silence as long ends every watch, so a
// cut link is noticed within twice this.
const watchCheck = 5 * time.Second

// watchLinger is how long a channel stays subscribed, and the connection
// open, after the last watch on it ended: a candidate that runs one
// RunIfLeader after another, waiting in each, watches again within it, and
// finds the subscription confirmed instead of dialling a connection and
// subscribing again (measured: that was 30% of a contended candidate's
// CPU). Short enough that the reader is gone soon after a package's last
// test (goleak waits about 0.4 s).
const watchLinger = 200 * time.Millisecond

// Watch subscribes to name's channel, which the scripts PUBLISH to when
// the lock is taken or released (a Release, a Close of the holder's
// session, a take-over from a session that is gone). It returns once Redis
// confirmed the subscription, so no such change after Watch returned is
// missed. Signals coalesce in a buffer of one.
//
// Every watch of a Backend shares one pub/sub connection and one goroutine,
// which exist while at least one watch does: ten thousand waiting
// campaigns cost Redis one client, not ten thousand.
//
// The expiry of a session or lease is not published: receivers must also
// poll. A channel stays subscribed, and the connection open, for
// watchLinger after its last watch ended. The Backend closes the channel when ctx ends, or when the shared
// subscription breaks (the connection failed, or Redis did not answer a
// PING within watchCheck): then every watch's channel is closed; watch
// again.
func (b *Backend) Watch(ctx context.Context, name string) (<-chan struct{}, error) {
	return b.watch(ctx, name, false)
}

// WatchReleases is Watch for a candidate waiting for name: it watches the
// lock's wake channel, which the scripts publish to only when they release
// a lock that an Acquire found held since its last release. So it signals
// nothing when the lock is taken, and nothing on the releases of a holder
// that takes it back at once while nobody tried meanwhile, which cost each
// watch a message. Call it after an Acquire found the lock held (which
// marks it wanted), then Acquire again before waiting: a release between
// the two Acquires is not missed.
func (b *Backend) WatchReleases(ctx context.Context, name string) (<-chan struct{}, error) {
	return b.watch(ctx, name, true)
}

// watch is Watch, or WatchReleases if releases.
func (b *Backend) watch(ctx context.Context, name string, releases bool) (<-chan struct{}, error) {
	if err := validate.Name(name); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, unavailable(ctx, "watch", err)
	}
	k := b.keys(name)
	channel := k.channel
	if releases {
		channel = k.wake
	}
	w, err := b.hub.Watch(ctx, channel)
	if err != nil {
		return nil, unavailable(ctx, "watch", err)
	}
	return w.C(), nil
}

// pubsub is the transport of a Backend's watch hub: one PubSub per run,
// a channel joined by SUBSCRIBE and confirmed by Redis's answer.
type pubsub struct {
	client goredis.UniversalClient
	h      *hub.Hub[struct{}]
	ps     *goredis.PubSub               // the current run's; guarded by h's lock
	took   func(channel, payload string) // told every message, for the loss watches
}

// newHub returns the watch hub of a Backend on client, which tells took
// every message it reads.
func newHub(client goredis.UniversalClient, took func(channel, payload string)) *hub.Hub[struct{}] {
	p := &pubsub{client: client, took: took}
	p.h = hub.New(hub.Config[struct{}]{Open: p.open, Join: p.join, Leave: p.leave, Linger: watchLinger})
	return p.h
}

// open starts a run's PubSub, with no channel yet (no I/O), closed when
// the run ends: its reader sees that and returns.
func (p *pubsub) open(ctx context.Context, r *hub.Run) func() error {
	ps := p.client.Subscribe(ctx)
	p.ps = ps
	context.AfterFunc(ctx, func() { _ = ps.Close() })
	r.Ready(nil) // each channel is confirmed by its own join
	return func() error { return p.read(r, ps) }
}

// join SUBSCRIBEs to channel; Redis's answer arrives through read.
func (p *pubsub) join(_ *hub.Run, channel string) error {
	return p.ps.Subscribe(context.Background(), channel)
}

// leave UNSUBSCRIBEs from channel.
func (p *pubsub) leave(_ *hub.Run, channel string) {
	_ = p.ps.Unsubscribe(context.Background(), channel)
}

// read turns the messages of ps into signals and answers to joins until
// ps is closed or the subscription breaks (the connection failed, or
// Redis did not answer a PING within watchCheck).
func (p *pubsub) read(r *hub.Run, ps *goredis.PubSub) error {
	pinged := false
	for {
		msg, err := ps.ReceiveTimeout(context.Background(), watchCheck)
		if err != nil {
			var ne net.Error
			if !pinged && errors.As(err, &ne) && ne.Timeout() && ps.Ping(context.Background()) == nil {
				pinged = true
				continue
			}
			return err
		}
		pinged = false
		switch m := msg.(type) {
		case *goredis.Message:
			p.h.Signal(r, m.Channel)
			p.took(m.Channel, m.Payload)
		case *goredis.Subscription:
			if m.Kind == "subscribe" {
				p.h.Joined(r, m.Channel, nil)
			}
		}
	}
}
