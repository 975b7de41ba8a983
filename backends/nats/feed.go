package nats

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// change is one write to the bucket as the feed delivers it.
type change struct {
	key   string
	rev   uint64
	live  bool // false: a delete, purge or expiry marker
	value []byte
}

// feedHeartbeat is how often the server tells an idle feed it lives; two
// missed, and the client makes the feed's consumer again.
const feedHeartbeat = 2 * time.Second

// feed is one watch of every key of the bucket, from the writes after it
// started: a JetStream ordered consumer, which the client
// makes again from the sequence after the last it delivered after a gap,
// a missed heartbeat or a reconnect, so no write is skipped while it
// lives (writes before the first delivered one excepted).
type feed struct {
	cc jetstream.ConsumeContext
	// done is closed once the feed delivers no more: after stop, or once
	// the connection closed.
	done <-chan struct{}
}

// watchAll starts a feed that calls fn, on the client's goroutine for the
// subscription, with every change in order. It returns once the server
// made the consumer.
func (b *bucket) watchAll(ctx context.Context, fn func(change)) (*feed, error) {
	cons, err := b.js.OrderedConsumer(ctx, b.stream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{b.subj + ">"},
		DeliverPolicy:  jetstream.DeliverNewPolicy,
	})
	if err != nil {
		return nil, fmt.Errorf("nats: watch bucket %s: %w", b.name, b.failed(err))
	}
	handle := func(m jetstream.Msg) {
		meta, err := m.Metadata()
		if err != nil {
			return
		}
		h := m.Headers()
		live := h.Get("KV-Operation") == "" && h.Get(jetstream.MarkerReasonHeader) == ""
		fn(change{key: strings.TrimPrefix(m.Subject(), b.subj), rev: meta.Sequence.Stream, live: live, value: m.Data()})
	}
	cc, err := cons.Consume(handle, jetstream.PullHeartbeat(feedHeartbeat))
	if err != nil {
		return nil, fmt.Errorf("nats: watch bucket %s: %w", b.name, b.failed(err))
	}
	return &feed{cc: cc, done: cc.Closed()}, nil
}

// stop ends the feed and waits until its handler returned for good.
func (f *feed) stop() {
	f.cc.Stop()
	<-f.done
}
