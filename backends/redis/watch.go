package redis

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

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
	w, ready := b.hub.add(ctx, b.client, channel)
	select {
	case err := <-ready:
		if err != nil {
			w.end()
			return nil, unavailable(ctx, "watch", err)
		}
		return w.ch, nil
	case <-ctx.Done():
		w.end()
		return nil, unavailable(ctx, "watch", ctx.Err())
	}
}

// hub multiplexes the watches of one Backend over one PubSub. Its reader
// goroutine owns the receiving side; everything else is under mu.
type hub struct {
	mu      sync.Mutex
	ps      *goredis.PubSub                // nil while no channel is subscribed
	subs    map[string]map[*watch]struct{} // by channel; empty while it lingers
	pending map[string][]chan error        // Watch calls waiting for a SUBSCRIBE's answer
	done    map[string]bool                // channels Redis confirmed
	idle    map[string]time.Time           // when the last watch of a lingering channel ended
	sweeper *time.Timer                    // leaves lingering channels; nil if none is armed
}

// watch is one Watch call's channel. The hub closes ch exactly once, when
// it removes the watch.
type watch struct {
	h       *hub
	channel string
	ch      chan struct{}
	stop    func() bool // unregisters the ctx callback
}

// add registers a watch on channel, starting the connection and its
// reader if needed, and subscribing if the channel is new. ready gets the
// SUBSCRIBE's outcome (at once if the channel is confirmed already).
func (h *hub) add(ctx context.Context, client goredis.UniversalClient, channel string) (*watch, <-chan error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ps == nil {
		h.ps = client.Subscribe(context.WithoutCancel(ctx)) // no channel yet: no I/O
		h.subs, h.pending, h.done = map[string]map[*watch]struct{}{}, map[string][]chan error{}, map[string]bool{}
		h.idle = map[string]time.Time{}
		go h.read(h.ps)
	}
	delete(h.idle, channel)
	w := &watch{h: h, channel: channel, ch: make(chan struct{}, 1)}
	w.stop = context.AfterFunc(ctx, w.end)
	ready := make(chan error, 1)
	if h.subs[channel] == nil {
		h.subs[channel] = map[*watch]struct{}{}
	}
	h.subs[channel][w] = struct{}{}
	switch {
	case h.done[channel]:
		ready <- nil
	case len(h.pending[channel]) > 0:
		h.pending[channel] = append(h.pending[channel], ready)
	default:
		h.pending[channel] = []chan error{ready}
		if err := h.ps.Subscribe(context.WithoutCancel(ctx), channel); err != nil {
			h.answer(channel, err)
		}
	}
	return w, ready
}

// answer tells the Watch calls waiting on channel how their SUBSCRIBE
// went; h.mu must be held.
func (h *hub) answer(channel string, err error) {
	for _, r := range h.pending[channel] {
		r <- err
	}
	delete(h.pending, channel)
	h.done[channel] = err == nil
}

// end removes w and closes its channel; if it was the last watch there,
// the channel lingers (see sweep). Calling it again does nothing.
func (w *watch) end() {
	h := w.h
	h.mu.Lock() // first: add sets w.stop under it, and ctx may end meanwhile
	defer h.mu.Unlock()
	w.stop()
	set, ok := h.subs[w.channel]
	if _, in := set[w]; !ok || !in {
		return // already ended, by its ctx or by a broken connection
	}
	delete(set, w)
	close(w.ch)
	if len(set) == 0 {
		h.linger(w.channel)
	}
}

// linger marks channel as left by its last watch, and arms the sweep.
// h.mu must be held.
func (h *hub) linger(channel string) {
	h.idle[channel] = time.Now()
	if h.sweeper == nil {
		ps := h.ps
		h.sweeper = time.AfterFunc(watchLinger, func() { h.sweep(ps) })
	}
}

// sweep leaves the channels that have lingered watchLinger, closes the
// connection once no channel is left, and arms itself again for the
// channels still lingering.
func (h *hub) sweep(ps *goredis.PubSub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ps != ps {
		return // broken meanwhile: everything went with it
	}
	h.sweeper = nil
	next := time.Duration(0)
	for channel, since := range h.idle {
		if left := watchLinger - time.Since(since); left > 0 {
			if next == 0 || left < next {
				next = left
			}
			continue
		}
		if h.pending[channel] != nil {
			// An UNSUBSCRIBE now would let the late answer be taken for
			// the answer to a later SUBSCRIBE: deliver lingers it again.
			delete(h.idle, channel)
			continue
		}
		subscribed := h.done[channel]
		delete(h.idle, channel)
		delete(h.subs, channel)
		delete(h.done, channel)
		if subscribed && len(h.subs) > 0 {
			_ = h.ps.Unsubscribe(context.Background(), channel)
		}
	}
	if len(h.subs) == 0 {
		_ = h.ps.Close() // the reader sees it and exits
		h.ps, h.pending, h.done, h.idle = nil, nil, nil, nil
		return
	}
	if next > 0 {
		h.sweeper = time.AfterFunc(next, func() { h.sweep(ps) })
	}
}

// read turns the messages of ps into signals until ps is closed or the
// subscription breaks; then, if ps is still the hub's, it ends every
// watch so that their owners watch again (and poll meanwhile).
func (h *hub) read(ps *goredis.PubSub) {
	pinged := false
	for {
		msg, err := ps.ReceiveTimeout(context.Background(), watchCheck)
		if err != nil {
			var ne net.Error
			if !pinged && errors.As(err, &ne) && ne.Timeout() && ps.Ping(context.Background()) == nil {
				pinged = true
				continue
			}
			h.broken(ps, err)
			return
		}
		pinged = false
		h.deliver(msg)
	}
}

// deliver hands one message from Redis to the watches it concerns.
func (h *hub) deliver(msg any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch m := msg.(type) {
	case *goredis.Message:
		for w := range h.subs[m.Channel] {
			select {
			case w.ch <- struct{}{}:
			default: // a signal is pending already
			}
		}
	case *goredis.Subscription:
		if m.Kind == "subscribe" && h.pending[m.Channel] != nil {
			h.answer(m.Channel, nil)
			if len(h.subs[m.Channel]) == 0 {
				h.linger(m.Channel) // every watch on it ended meanwhile
			}
		}
	}
}

// broken ends every watch of ps, unless the hub has closed ps itself.
func (h *hub) broken(ps *goredis.PubSub, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ps != ps {
		return // closed on purpose when the last watch ended
	}
	for channel := range h.pending {
		h.answer(channel, err)
	}
	for _, set := range h.subs {
		for w := range set {
			w.stop()
			close(w.ch)
		}
	}
	if h.sweeper != nil {
		h.sweeper.Stop()
		h.sweeper = nil
	}
	h.subs, h.pending, h.done, h.idle = nil, nil, nil, nil
	_ = ps.Close()
	h.ps = nil
}
