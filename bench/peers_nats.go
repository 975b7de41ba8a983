package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hustings/hustings/backends/nats/natstest"
)

// natsPeerBucket is the bucket of the raw-KV peer, beside the backend's.
const natsPeerBucket = "bench_peer"

// natsPeerPoll is how often a waiting raw-KV candidate tries again when
// its watch told it nothing (a release is pushed; a crash is not).
const natsPeerPoll = 100 * time.Millisecond

// natsPeers is the election a NATS user writes on raw KV, no library
// being served by the module proxy (github.com/nats-io/graft is not): a
// key created with a per-key TTL (Create with KeyTTL: only if absent),
// renewed every third of the TTL by a write conditioned on its revision
// that resends the TTL (KeyValue.Update would drop it), and deleted on
// its revision at the end; a waiter watches the key and tries again on
// its deletion or expiry marker, or every natsPeerPoll.
func natsPeers(url string) []peer {
	return []peer{{
		name: "raw KV (create with TTL, renew on revision)",
		note: fmt.Sprintf("KeyValue.Create with KeyTTL(%v), renewed every TTL/3 by a publish on the revision with the TTL, Delete on the revision; waiters watch the key, polling every %v; no fencing token but the revision", peerTTL, natsPeerPoll),
		open: func(ctx context.Context) (locker, error) {
			nc, err := natstest.Connect(url)
			if err != nil {
				return nil, err
			}
			js, err := jetstream.New(nc)
			if err != nil {
				nc.Close()
				return nil, err
			}
			kv, err := js.KeyValue(ctx, natsPeerBucket)
			if err != nil {
				nc.Close()
				return nil, err
			}
			return &rawKVLocker{nc: nc, js: js, kv: kv}, nil
		},
	}}
}

// createPeerBucket makes the raw-KV peer's bucket, with per-key TTLs.
func createPeerBucket(ctx context.Context, js jetstream.JetStream) error {
	_, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: natsPeerBucket, LimitMarkerTTL: time.Second})
	return err
}

type rawKVLocker struct {
	nc *nats.Conn
	js jetstream.JetStream
	kv jetstream.KeyValue
}

func (r *rawKVLocker) run(ctx context.Context, name string, cs func()) error {
	key := "lock." + name
	// Watch before the first try, so a release after it wakes us.
	w, err := r.kv.Watch(ctx, key, jetstream.UpdatesOnly(), jetstream.MetaOnly())
	if err != nil {
		return err
	}
	defer w.Stop()
	rev, err := r.take(ctx, key, w)
	if err != nil {
		return err
	}
	rctx, stop := context.WithCancel(ctx)
	type renewal struct {
		rev uint64
		err error
	}
	renewed := make(chan renewal, 1)
	go func() {
		last, err := r.renew(rctx, key, rev)
		renewed <- renewal{last, err}
	}()
	cs()
	stop()
	last := <-renewed
	if last.err != nil {
		return last.err
	}
	return r.kv.Delete(ctx, key, jetstream.LastRevision(last.rev))
}

// take creates key with the TTL, waiting while another holds it.
func (r *rawKVLocker) take(ctx context.Context, key string, w jetstream.KeyWatcher) (uint64, error) {
	poll := time.NewTicker(natsPeerPoll)
	defer poll.Stop()
	for {
		rev, err := r.kv.Create(ctx, key, []byte("held"), jetstream.KeyTTL(peerTTL))
		if err == nil {
			return rev, nil
		}
		var api *jetstream.APIError
		if !errors.Is(err, jetstream.ErrKeyExists) && !(errors.As(err, &api) && api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence) {
			return 0, err
		}
	wait:
		for {
			select {
			case e := <-w.Updates():
				if e != nil && e.Operation() != jetstream.KeyValuePut {
					break wait
				}
			case <-poll.C:
				break wait
			case <-ctx.Done():
				return 0, ctx.Err()
			}
		}
	}
}

// renew rewrites key on its revision with the TTL every third of it,
// until ctx ends, and returns the last revision, which Delete is
// conditioned on.
func (r *rawKVLocker) renew(ctx context.Context, key string, rev uint64) (uint64, error) {
	tick := time.NewTicker(peerTTL / 3)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			ack, err := r.js.PublishMsg(ctx, &nats.Msg{Subject: "$KV." + natsPeerBucket + "." + key, Data: []byte("held")},
				jetstream.WithExpectLastSequencePerSubject(rev), jetstream.WithMsgTTL(peerTTL))
			if err != nil {
				return rev, fmt.Errorf("renew %s: %w", key, err)
			}
			rev = ack.Sequence
		case <-ctx.Done():
			return rev, nil
		}
	}
}

func (r *rawKVLocker) close() { r.nc.Close() }
