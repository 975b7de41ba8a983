package nats

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
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
	staleTries    = 30              // multi-key gets answered by a replica behind this client
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
	_, e, err := b.leaderGet(ctx, map[string]any{"last_by_subj": b.subj + key})
	if err != nil {
		return entry{}, fmt.Errorf("nats: get %s: %w", key, err)
	}
	return e, nil
}

// leaderGet sends a message get to the stream's leader and returns the
// message's key and entry; a key with no message is "" and no error.
func (b *bucket) leaderGet(ctx context.Context, req map[string]any) (string, entry, error) {
	m, err := b.nc.RequestWithContext(ctx, b.api+"STREAM.MSG.GET."+b.stream, encode(req))
	if err != nil {
		return "", entry{}, b.failed(err)
	}
	var resp struct {
		Error *jetstream.APIError `json:"error"`
		Msg   *struct {
			Subject string `json:"subject"`
			Seq     uint64 `json:"seq"`
			Header  []byte `json:"hdrs"`
			Data    []byte `json:"data"`
		} `json:"message"`
	}
	switch err := json.Unmarshal(m.Data, &resp); {
	case err != nil:
		return "", entry{}, err
	case resp.Error != nil && resp.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound:
		return "", entry{}, nil
	case resp.Error != nil:
		return "", entry{}, b.failed(resp.Error)
	case resp.Msg == nil:
		return "", entry{}, errors.New("empty answer")
	}
	h := nats.Header{}
	if len(resp.Msg.Header) > 0 {
		if h, err = nats.DecodeHeadersMsg(resp.Msg.Header); err != nil {
			return "", entry{}, err
		}
	}
	b.saw(resp.Msg.Seq)
	return strings.TrimPrefix(resp.Msg.Subject, b.subj), entry{value: resp.Msg.Data, rev: resp.Msg.Seq, live: live(h)}, nil
}

// scan returns the last message of every key that matches pattern (a key
// with subject wildcards), as of every write this bucket made or read:
// getMany, and where no replica's answer can show that (it found no key,
// so it sent no sequence) the stream's leader, one message get per key.
func (b *bucket) scan(ctx context.Context, pattern string) (map[string]entry, error) {
	want := b.last.Load()
	out, err := b.getMany(ctx, []string{pattern})
	if err != nil || len(out) > 0 || want == 0 {
		return out, err
	}
	return b.scanLeader(ctx, pattern)
}

// scanLeader is scan answered by the stream's leader: a message get of
// the first message after the last one found, until none is left.
func (b *bucket) scanLeader(ctx context.Context, pattern string) (map[string]entry, error) {
	out := map[string]entry{}
	for seq := uint64(0); ; {
		key, e, err := b.leaderGet(ctx, map[string]any{"next_by_subj": b.subj + pattern, "seq": seq})
		switch {
		case err != nil:
			return nil, fmt.Errorf("nats: scan %s: %w", pattern, err)
		case key == "":
			return out, nil
		}
		out[key] = e
		seq = e.rev + 1
	}
}

// getMany returns the last message of every key (or wildcard) that has
// one in one round trip (a multi-key get per maxMulti keys, sent
// together, answered to one inbox, each batch ending with EOB) from any
// replica, as of every write this bucket made or read. A replica answers
// direct gets before it applied every write the leader acknowledged (the
// server's read-after-write check, min_last_seq, was removed before 2.12
// shipped: nats-server #7285), so each batch's EOB is checked: one that
// names a stream sequence below this bucket's last is asked again, after
// a pause; so is every batch after the bucket's last sequence was found
// above the leader's (the stream was made again). A batch that found no
// key names no sequence: its keys are absent on a replica that may lag,
// and a caller that relies on an absence reads the leader (see scan).
func (b *bucket) getMany(ctx context.Context, keys []string) (map[string]entry, error) {
	out := make(map[string]entry, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	pending := slices.Collect(slices.Chunk(keys, maxMulti))
	for try := 1; ; try++ {
		want := b.last.Load()
		behind, err := b.multiGet(ctx, pending, want, out)
		switch {
		case err != nil:
			return nil, err
		case len(behind) == 0:
			return out, nil
		case try == staleTries:
			return nil, fmt.Errorf("%w: nats: get: the replica that answers has not applied this client's writes up to sequence %d after %d reads",
				backends.ErrUnavailable, want, try)
		case try == staleTries/2:
			if err := b.leaderLast(ctx, want); err != nil {
				return nil, err
			}
		}
		pending = behind
		pause := time.NewTimer(time.Duration(try) * time.Millisecond) // 0.4 s in all
		select {
		case <-pause.C:
		case <-ctx.Done():
			pause.Stop()
			return nil, b.failed(ctx.Err())
		}
	}
}

// multiGet sends a multi-key get per batch of keys and adds what the
// answers carry to out; it returns the batches answered by a replica
// behind sequence want.
func (b *bucket) multiGet(ctx context.Context, batches [][]string, want uint64, out map[string]entry) ([][]string, error) {
	inbox := b.nc.NewInbox()
	sub, err := b.nc.SubscribeSync(inbox + ".*")
	if err != nil {
		return nil, b.failed(err)
	}
	defer sub.Unsubscribe()
	for i, chunk := range batches {
		subjects := make([]string, len(chunk))
		for i, k := range chunk {
			subjects[i] = b.subj + k
		}
		// The reply subject names the batch: answers may come in any order.
		if err := b.nc.PublishRequest(b.api+"DIRECT.GET."+b.stream, inbox+"."+strconv.Itoa(i), encode(map[string]any{"multi_last": subjects})); err != nil {
			return nil, b.failed(err)
		}
	}
	var behind [][]string
	got := map[int]map[string]entry{}
	for left := len(batches); left > 0; {
		m, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			return nil, b.failed(err)
		}
		i, err := strconv.Atoi(strings.TrimPrefix(m.Subject, inbox+"."))
		if err != nil || i < 0 || i >= len(batches) {
			continue // not an answer to this call
		}
		key, e, err := b.parse(m)
		switch {
		case err != nil:
			return nil, err
		case key != "":
			if got[i] == nil {
				got[i] = map[string]entry{}
			}
			got[i][key] = e
			continue
		}
		left-- // the batch's end: EOB, or no key found
		upTo, _ := strconv.ParseUint(m.Header.Get("Nats-UpTo-Sequence"), 10, 64)
		if m.Header.Get("Status") == "204" && upTo < want {
			behind = append(behind, batches[i])
			continue
		}
		maps.Copy(out, got[i])
	}
	return behind, nil
}

// leaderLast lowers the bucket's last sequence to the leader's where the
// leader's is below want: the stream was deleted and made again, and no
// replica will reach want.
func (b *bucket) leaderLast(ctx context.Context, want uint64) error {
	s, err := b.js.Stream(ctx, b.stream)
	if err != nil {
		return b.failed(err)
	}
	if last := s.CachedInfo().State.LastSeq; last < want {
		b.last.CompareAndSwap(want, last)
	}
	return nil
}

// get returns the last message of key from any replica, which may lag
// behind the leader: a caller that relies on what it finds reads the
// leader (getLeader) or many keys (getMany).
func (b *bucket) get(ctx context.Context, key string) (entry, error) {
	m, err := b.nc.RequestWithContext(ctx, b.api+"DIRECT.GET."+b.stream+"."+b.subj+key, nil)
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
