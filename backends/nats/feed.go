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

// watchAll starts a feed of every key of the bucket, from the writes
// after it started: a JetStream ordered consumer, which the client makes
// again from the sequence after the last it delivered after a gap, a
// missed heartbeat or a reconnect, so no write is skipped while it lives.
// It calls fn, on the client's goroutine for the subscription, with every
// change in order, and returns once the server made the consumer. Stop
// ends it; Closed is closed once it delivers no more (after Stop, or
// once the connection closed).
func (b *bucket) watchAll(ctx context.Context, fn func(change)) (jetstream.ConsumeContext, error) {
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
	return cc, nil
}
