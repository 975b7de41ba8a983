package nats

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/internal/record"
)

const (
	maxMulti      = 1024            // keys the server answers in one multi-key get
	busyTries     = 20              // sends of a write a replicated stream refused unchecked
	feedHeartbeat = 2 * time.Second // from the server to an idle feed; two missed, the client remakes it
)

// entry is the last message of a key in the bucket.
type entry struct {
	value []byte
	rev   uint64 // its stream sequence (a marker's too); 0: the key has no message
	live  bool   // false for a delete, purge or expiry marker, or no message
}

// bucket is the record.Driver of the backend (driver.go, registry.go):
// the records are keys of one KV bucket, read and written through raw
// JetStream requests, since the KV API hides markers' revisions and
// sends no TTL with a conditioned write. Its errors are translated.
type bucket struct {
	js     jetstream.JetStream
	nc     *nats.Conn
	stream string        // KV_<bucket>
	subj   string        // $KV.<bucket>.
	api    string        // $JS.API. or the domain's prefix
	last   atomic.Uint64 // the highest stream sequence this bucket wrote or read
}

// saw raises b.last to seq.
func (b *bucket) saw(seq uint64) {
	for {
		cur := b.last.Load()
		if seq <= cur || b.last.CompareAndSwap(cur, seq) {
			return
		}
	}
}

func newBucket(js jetstream.JetStream, name string) *bucket {
	o, api := js.Options(), "$JS.API."
	switch {
	case o.Domain != "":
		api = "$JS." + o.Domain + ".API."
	case o.APIPrefix != "":
		api = strings.TrimSuffix(o.APIPrefix, ".") + "."
	}
	return &bucket{js: js, nc: js.Conn(), stream: "KV_" + name, subj: "$KV." + name + ".", api: api}
}

// live reports whether a message's headers are a value's, not a marker's.
func live(h nats.Header) bool {
	return h.Get("KV-Operation") == "" && h.Get(jetstream.MarkerReasonHeader) == ""
}

// getLeader is get answered by the stream's leader, never by a replica
// that may lag behind it: for a verdict a write relies on.
func (b *bucket) getLeader(ctx context.Context, key string) (entry, error) {
	req := encode(map[string]string{"last_by_subj": b.subj + key})
	m, err := b.nc.RequestWithContext(ctx, b.api+"STREAM.MSG.GET."+b.stream, req)
	if err != nil {
		return entry{}, b.failed(err)
	}
	var resp struct {
		Error *jetstream.APIError `json:"error"`
		Msg   *struct {
			Seq    uint64 `json:"seq"`
			Header []byte `json:"hdrs"`
			Data   []byte `json:"data"`
		} `json:"message"`
	}
	switch err := json.Unmarshal(m.Data, &resp); {
	case err != nil:
		return entry{}, fmt.Errorf("nats: get %s: %w", key, err)
	case resp.Error != nil && resp.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound:
		return entry{}, nil
	case resp.Error != nil:
		return entry{}, b.failed(resp.Error)
	case resp.Msg == nil:
		return entry{}, fmt.Errorf("nats: get %s: empty answer", key)
	}
	h := nats.Header{}
	if len(resp.Msg.Header) > 0 {
		if h, err = nats.DecodeHeadersMsg(resp.Msg.Header); err != nil {
			return entry{}, fmt.Errorf("nats: get %s: %w", key, err)
		}
	}
	b.saw(resp.Msg.Seq)
	return entry{value: resp.Msg.Data, rev: resp.Msg.Seq, live: live(h)}, nil
}

// getMany returns the last message of every key (or wildcard) that has
// one, from any replica that has every write this bucket made or read
// (min_last_seq, server 2.12 and later: a replica behind hands the
// request to the stream's leader), in one round trip: a multi-key get per
// maxMulti keys, sent together, answered to one inbox, each batch ending
// with EOB. Without min_last_seq a replica that had not yet applied this
// client's removal of an entry answered with the entry.
func (b *bucket) getMany(ctx context.Context, keys []string) (map[string]entry, error) {
	out := make(map[string]entry, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	inbox := b.nc.NewRespInbox()
	sub, err := b.nc.SubscribeSync(inbox)
	if err != nil {
		return nil, b.failed(err)
	}
	defer sub.Unsubscribe()
	batches := 0
	for chunk := range slices.Chunk(keys, maxMulti) {
		subjects := make([]string, len(chunk))
		for i, k := range chunk {
			subjects[i] = b.subj + k
		}
		req := encode(struct {
			Multi []string `json:"multi_last"`
			Min   uint64   `json:"min_last_seq,omitempty"`
		}{subjects, b.last.Load()})
		if err := b.nc.PublishRequest(b.api+"DIRECT.GET."+b.stream, inbox, req); err != nil {
			return nil, b.failed(err)
		}
		batches++
	}
	for batches > 0 {
		m, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			return nil, b.failed(err)
		}
		switch key, e, err := b.parse(m); {
		case err != nil:
			return nil, err
		case key == "": // the end of a batch
			batches--
		default:
			out[key] = e
		}
	}
	return out, nil
}

// get returns the last message of key, as any replica that has every
// write this bucket made or read has it (see getMany).
func (b *bucket) get(ctx context.Context, key string) (entry, error) {
	var req []byte
	if last := b.last.Load(); last > 0 {
		req = encode(struct {
			Min uint64 `json:"min_last_seq"`
		}{last})
	}
	m, err := b.nc.RequestWithContext(ctx, b.api+"DIRECT.GET."+b.stream+"."+b.subj+key, req)
	if err != nil {
		return entry{}, b.failed(err)
	}
	_, e, err := b.parse(m)
	return e, err
}

// parse reads an answer to a direct get: a key's last message, or a
// status and no key: no message (404), the end of a multi-key get (204),
// or no stream (503).
func (b *bucket) parse(m *nats.Msg) (string, entry, error) {
	status := m.Header.Get("Status")
	switch status {
	case "":
		rev, err := strconv.ParseUint(m.Header.Get(jetstream.SequenceHeader), 10, 64)
		if err != nil {
			return "", entry{}, fmt.Errorf("nats: get: bad sequence header: %w", err)
		}
		b.saw(rev)
		return strings.TrimPrefix(m.Header.Get(jetstream.SubjectHeader), b.subj), entry{m.Data, rev, live(m.Header)}, nil
	case "412": // behind min_last_seq: a mirror, or the stream made again from 1
		b.last.Store(0)
		return "", entry{}, fmt.Errorf("%w: nats: get: no server has this client's last write (412); read again", backends.ErrUnavailable)
	case "204", "404":
		return "", entry{}, nil
	case "503":
		return "", entry{}, b.failed(nats.ErrNoResponders)
	}
	return "", entry{}, fmt.Errorf("nats: get: status %s %s", status, m.Header.Get("Description"))
}

// write stores value under key if its last revision is last (0: no
// message), and returns the new revision; with ttl > 0 the server removes
// it ttl (rounded up to whole seconds, its unit) after, leaving a marker.
func (b *bucket) write(ctx context.Context, key string, value []byte, last uint64, ttl time.Duration) (uint64, error) {
	m := &nats.Msg{Subject: b.subj + key, Data: value, Header: nats.Header{}}
	opts := []jetstream.PublishOpt{jetstream.WithExpectLastSequencePerSubject(last)}
	if ttl > 0 {
		opts = append(opts, jetstream.WithMsgTTL(seconds(ttl)))
	}
	return b.publish(ctx, m, opts...)
}

// remove purges key if its last revision is last (0: whatever it is),
// leaving a marker kept markerTTL.
func (b *bucket) remove(ctx context.Context, key string, last uint64) error {
	m := &nats.Msg{Subject: b.subj + key, Header: nats.Header{}}
	m.Header.Set("KV-Operation", "PURGE")
	m.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	opts := []jetstream.PublishOpt{jetstream.WithMsgTTL(markerTTL)}
	if last != 0 {
		opts = append(opts, jetstream.WithExpectLastSequencePerSubject(last))
	}
	_, err := b.publish(ctx, m, opts...)
	return err
}

// publish sends a conditioned write and returns its revision. A write a
// replicated stream refused unchecked (10164, see the package doc) is
// sent again after a short pause.
func (b *bucket) publish(ctx context.Context, m *nats.Msg, opts ...jetstream.PublishOpt) (uint64, error) {
	for try := 1; ; try++ {
		ack, err := b.js.PublishMsg(ctx, m, opts...)
		if err == nil {
			b.saw(ack.Sequence)
			return ack.Sequence, nil
		}
		var api *jetstream.APIError
		if !errors.As(err, &api) || api.ErrorCode != jetstream.JSErrCodeStreamWrongLastSequenceConstant || try == busyTries {
			return 0, b.failed(err)
		}
		pause := time.NewTimer(time.Duration(try) * time.Duration(100+rand.IntN(400)) * time.Microsecond)
		select {
		case <-pause.C:
		case <-ctx.Done():
			pause.Stop()
			return 0, b.failed(err)
		}
	}
}

// watchAll calls fn, on one goroutine, with every write to the bucket
// after it started, in order: an ordered consumer, made again from the
// next sequence after a gap, a missed heartbeat or a reconnect. Closed is
// closed once it delivers no more (after Stop, or the connection closed).
func (b *bucket) watchAll(ctx context.Context, fn func(key string, e entry)) (jetstream.ConsumeContext, error) {
	cons, err := b.js.OrderedConsumer(ctx, b.stream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{b.subj + ">"},
		DeliverPolicy:  jetstream.DeliverNewPolicy,
	})
	if err != nil {
		return nil, b.failed(err)
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		if meta, err := m.Metadata(); err == nil {
			fn(strings.TrimPrefix(m.Subject(), b.subj), entry{m.Data(), meta.Sequence.Stream, live(m.Headers())})
		}
	}, jetstream.PullHeartbeat(feedHeartbeat))
	return cc, b.failed(err)
}

// failed translates a client error: a failed revision condition is
// record.ErrConflict, a closed connection ErrInvalid, a missing bucket
// ErrUnavailable naming CreateBucket.
func (b *bucket) failed(err error) error {
	var api *jetstream.APIError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &api) && api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence:
		return record.ErrConflict
	case errors.Is(err, nats.ErrConnectionClosed):
		return fmt.Errorf("%w: nats: the connection is closed", backends.ErrInvalid)
	case errors.Is(err, jetstream.ErrStreamNotFound), errors.Is(err, jetstream.ErrNoStreamResponse), errors.Is(err, nats.ErrNoResponders):
		return fmt.Errorf("%w: nats: no stream %s answers (was CreateBucket run? is JetStream up?): %w",
			backends.ErrUnavailable, b.stream, err)
	}
	return err
}

// seconds rounds d up to whole seconds, at least one.
func seconds(d time.Duration) time.Duration {
	return max(time.Second, (d + time.Second - 1).Truncate(time.Second))
}
