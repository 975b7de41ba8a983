package redis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/hustings/hustings/backends"
)

// watchCheck is how long a watch waits for a message before it PINGs
// Redis; a second silence as long ends the watch, so a cut link is noticed
// within twice this.
const watchCheck = 5 * time.Second

// Watch subscribes to name's channel, which the scripts PUBLISH to when
// the lock is taken or released (a Release, a Close of the holder's
// session, a take-over from a session that is gone). It returns once Redis
// confirmed the subscription, so no such change after Watch returned is
// missed. Signals coalesce in a buffer of one.
//
// The expiry of a session or lease is not published: receivers must also
// poll. The Backend closes the channel when ctx ends, or when the
// subscription breaks (the connection failed, or Redis did not answer a
// PING within watchCheck); then watch again. Each watch holds a connection
// and a goroutine until its channel is closed.
func (b *Backend) Watch(ctx context.Context, name string) (<-chan struct{}, error) {
	if err := backends.ValidateName(name); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, unavailable(ctx, "watch", err)
	}
	ps := b.client.Subscribe(ctx) // no channel yet: no I/O
	stop := context.AfterFunc(ctx, func() { _ = ps.Close() })
	if err := subscribe(ctx, ps, b.keys(name).channel); err != nil {
		stop()
		_ = ps.Close()
		return nil, unavailable(ctx, "watch", err)
	}
	ch := make(chan struct{}, 1)
	go relay(ctx, ps, ch, stop)
	return ch, nil
}

// subscribe subscribes ps to channel and waits for Redis to confirm it.
func subscribe(ctx context.Context, ps *goredis.PubSub, channel string) error {
	if err := ps.Subscribe(ctx, channel); err != nil {
		return err
	}
	msg, err := ps.ReceiveTimeout(ctx, watchCheck)
	if err != nil {
		return err
	}
	if sub, ok := msg.(*goredis.Subscription); !ok || sub.Kind != "subscribe" || sub.Channel != channel {
		return fmt.Errorf("unexpected answer to SUBSCRIBE: %v", msg)
	}
	return nil
}

// relay turns messages on ps into signals on ch until ctx ends or the
// subscription breaks; then it closes ps and ch. It owns ps and ch.
func relay(ctx context.Context, ps *goredis.PubSub, ch chan<- struct{}, stop func() bool) {
	defer close(ch)
	defer ps.Close()
	defer stop()
	pinged := false
	for {
		msg, err := ps.ReceiveTimeout(ctx, watchCheck)
		if err != nil {
			var ne net.Error
			if ctx.Err() != nil || pinged || !errors.As(err, &ne) || !ne.Timeout() {
				return
			}
			if ps.Ping(ctx) != nil {
				return
			}
			pinged = true
			continue
		}
		pinged = false
		if _, ok := msg.(*goredis.Message); ok {
			select {
			case ch <- struct{}{}:
			default: // a signal is pending already
			}
		}
	}
}
