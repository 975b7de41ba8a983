package nats

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Errors of the bucket's conditional writes, before the backend
// translates them.
var (
	// errChanged: the key's last revision was not the one the write was
	// conditioned on (JetStream's "wrong last sequence").
	errChanged = errors.New("nats: key changed")
	// errNoBucket: no stream answers for the bucket.
	errNoBucket = errors.New("nats: no such bucket")
)

// Headers of the server's status answers (nats.go keeps its names
// unexported).
const (
	statusHdr = "Status"
	descrHdr  = "Description"
)

// maxMulti is how many keys the server answers in one multi-key get.
const maxMulti = 1024

// entry is the last message of a key in the bucket.
type entry struct {
	value []byte
	// rev is the message's stream sequence: the key's revision, or the
	// revision of the marker that removed it; 0 if the key has no message.
	rev uint64
	// live is false for a delete, purge or expiry marker, or no message.
	live bool
}

// bucket reads and writes the keys of one KV bucket through raw JetStream
// requests: direct gets that return markers with their revision (the KV
// API hides it), and publishes that carry both a revision condition and
// a TTL (Update sends no TTL).
type bucket struct {
	js     jetstream.JetStream
	nc     *nats.Conn
	name   string
	stream string // KV_<bucket>
	subj   string // $KV.<bucket>.
	api    string // $JS.API. or the domain's prefix
}

func newBucket(js jetstream.JetStream, name string) *bucket {
	o := js.Options()
	api := "$JS.API."
	switch {
	case o.Domain != "":
		api = "$JS." + o.Domain + ".API."
	case o.APIPrefix != "":
		api = strings.TrimSuffix(o.APIPrefix, ".") + "."
	}
	return &bucket{js: js, nc: js.Conn(), name: name, stream: "KV_" + name, subj: "$KV." + name + ".", api: api}
}

// get returns the last message of key.
func (b *bucket) get(ctx context.Context, key string) (entry, error) {
	m, err := b.nc.RequestWithContext(ctx, b.api+"DIRECT.GET."+b.stream+"."+b.subj+key, nil)
	if err != nil {
		return entry{}, b.failed(err)
	}
	if status := m.Header.Get(statusHdr); status != "" {
		if status == "404" {
			return entry{}, nil
		}
		return entry{}, fmt.Errorf("nats: get %s: status %s %s", key, status, m.Header.Get(descrHdr))
	}
	return parse(m)
}

// getLeader is get answered by the stream's leader, never by a replica
// that may lag behind it (direct gets may be answered by any replica):
// for a judgement that a write will rely on, such as "the holder's
// session is gone".
func (b *bucket) getLeader(ctx context.Context, key string) (entry, error) {
	req, err := json.Marshal(struct {
		Last string `json:"last_by_subj"`
	}{b.subj + key})
	if err != nil {
		return entry{}, err
	}
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
	if err := json.Unmarshal(m.Data, &resp); err != nil {
		return entry{}, fmt.Errorf("nats: get %s: %w", key, err)
	}
	switch {
	case resp.Error != nil && resp.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound:
		return entry{}, nil
	case resp.Error != nil:
		return entry{}, b.failed(resp.Error)
	case resp.Msg == nil:
		return entry{}, fmt.Errorf("nats: get %s: empty answer", key)
	}
	e := entry{value: resp.Msg.Data, rev: resp.Msg.Seq, live: true}
	if len(resp.Msg.Header) > 0 {
		h, err := nats.DecodeHeadersMsg(resp.Msg.Header)
		if err != nil {
			return entry{}, fmt.Errorf("nats: get %s: %w", key, err)
		}
		e.live = h.Get("KV-Operation") == "" && h.Get(jetstream.MarkerReasonHeader) == ""
	}
	return e, nil
}

// getMany returns the last message of every key (a key with no message
// is missing from the map; a key may be a wildcard), in one round trip:
// one multi-key get per maxMulti keys, sent together.
func (b *bucket) getMany(ctx context.Context, keys []string) (map[string]entry, error) {
	out := make(map[string]entry, len(keys))
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make([]error, (len(keys)+maxMulti-1)/maxMulti)
	for i := range errs {
		chunk := keys[i*maxMulti : min(len(keys), (i+1)*maxMulti)]
		wg.Go(func() {
			errs[i] = b.multi(ctx, chunk, func(key string, e entry) {
				mu.Lock()
				out[key] = e
				mu.Unlock()
			})
		})
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// multi asks for the last messages of keys (at most maxMulti) in one
// request, whose answers stream to an inbox and end with an EOB status.
func (b *bucket) multi(ctx context.Context, keys []string, found func(string, entry)) error {
	subjects := make([]string, len(keys))
	for i, k := range keys {
		subjects[i] = b.subj + k
	}
	req, err := json.Marshal(struct {
		Multi []string `json:"multi_last"`
	}{subjects})
	if err != nil {
		return err
	}
	inbox := b.nc.NewRespInbox()
	sub, err := b.nc.SubscribeSync(inbox)
	if err != nil {
		return b.failed(err)
	}
	defer sub.Unsubscribe()
	if err := b.nc.PublishRequest(b.api+"DIRECT.GET."+b.stream, inbox, req); err != nil {
		return b.failed(err)
	}
	for {
		m, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			return b.failed(err)
		}
		switch status := m.Header.Get(statusHdr); status {
		case "":
			e, err := parse(m)
			if err != nil {
				return err
			}
			found(strings.TrimPrefix(m.Header.Get(jetstream.SubjectHeader), b.subj), e)
		case "204", "404": // end of the batch; no key has a message
			return nil
		case "503":
			return errNoBucket
		default:
			return fmt.Errorf("nats: get: status %s %s", status, m.Header.Get(descrHdr))
		}
	}
}

// parse reads a direct get's answer.
func parse(m *nats.Msg) (entry, error) {
	rev, err := strconv.ParseUint(m.Header.Get(jetstream.SequenceHeader), 10, 64)
	if err != nil {
		return entry{}, fmt.Errorf("nats: get: bad sequence header: %w", err)
	}
	live := m.Header.Get("KV-Operation") == "" && m.Header.Get(jetstream.MarkerReasonHeader) == ""
	return entry{value: m.Data, rev: rev, live: live}, nil
}

// write stores value under key if the key's last revision is last (0: it
// has no message), and returns the new revision. With ttl > 0 the server
// removes the key ttl after the write, rounded up to whole seconds (the
// server's unit; it would truncate), leaving an expiry marker.
func (b *bucket) write(ctx context.Context, key string, value []byte, last uint64, ttl time.Duration) (uint64, error) {
	m := &nats.Msg{Subject: b.subj + key, Data: value, Header: nats.Header{}}
	opts := []jetstream.PublishOpt{jetstream.WithExpectLastSequencePerSubject(last)}
	if ttl > 0 {
		opts = append(opts, jetstream.WithMsgTTL(seconds(ttl)))
	}
	return b.publish(ctx, m, opts...)
}

// remove purges key if its last revision is last (0: whatever it is),
// leaving a marker that the server removes markerTTL later.
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

// busyTries bounds how often publish sends a write that a replicated
// stream refused unchecked.
const busyTries = 20

// publish sends a conditioned write and returns its revision. A
// replicated stream refuses a write whose condition names a subject
// another conditioned write in flight checks or writes, without checking
// it (error 10164, "wrong last sequence" like a failed check's 10071):
// nothing was written, so it sends it again after a short pause.
func (b *bucket) publish(ctx context.Context, m *nats.Msg, opts ...jetstream.PublishOpt) (uint64, error) {
	for try := 1; ; try++ {
		ack, err := b.js.PublishMsg(ctx, m, opts...)
		if err == nil {
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

// failed translates a driver error: a failed revision condition is
// errChanged, a missing stream errNoBucket; others pass as they are (a
// replicated stream's refusal of an unchecked write among them: see
// publish).
func (b *bucket) failed(err error) error {
	var api *jetstream.APIError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &api) && api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence:
		return errChanged
	case errors.Is(err, jetstream.ErrStreamNotFound), errors.Is(err, jetstream.ErrNoStreamResponse):
		return fmt.Errorf("%w %s: %w", errNoBucket, b.stream, err)
	}
	return err
}

// seconds rounds d up to whole seconds, at least one.
func seconds(d time.Duration) time.Duration {
	return max(time.Second, (d + time.Second - 1).Truncate(time.Second))
}
