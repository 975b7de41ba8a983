package main

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hustings/hustings/backends"
	natsbackend "github.com/hustings/hustings/backends/nats"
	"github.com/hustings/hustings/backends/nats/natstest"
)

// startNATS starts a nats-server process with JetStream (package
// natstest: its store in a temporary directory, fsync left to the
// server's default interval, as a default install runs), the backend's
// bucket and the raw-KV peer's.
func startNATS() (*system, error) {
	srv, err := natstest.StartServer()
	if err != nil {
		return nil, err
	}
	s := &system{name: "nats", maxTTL: 30 * time.Second, closers: []func(){srv.Stop}}
	connect := func() (*nats.Conn, jetstream.JetStream, error) {
		nc, err := natstest.Connect(srv.URL())
		if err != nil {
			return nil, nil, err
		}
		js, err := jetstream.New(nc)
		if err != nil {
			nc.Close()
			return nil, nil, err
		}
		return nc, js, nil
	}
	nc, js, err := connect()
	if err != nil {
		return s, err
	}
	s.closers = append(s.closers, nc.Close)
	ctx := context.Background()
	if err := natsbackend.CreateBucket(ctx, js); err != nil {
		return s, err
	}
	if err := createPeerBucket(ctx, js); err != nil {
		return s, err
	}
	if s.backend, err = natsbackend.New(js); err != nil {
		return s, err
	}
	s.fresh = func() (backends.Backend, func(), error) {
		nc, js, err := connect()
		if err != nil {
			return nil, nil, err
		}
		b, err := natsbackend.New(js)
		if err != nil {
			nc.Close()
			return nil, nil, err
		}
		return b, nc.Close, nil
	}
	kv, err := js.KeyValue(ctx, natsPeerBucket)
	if err != nil {
		return s, err
	}
	own, err := js.KeyValue(ctx, natsbackend.DefaultBucket)
	if err != nil {
		return s, err
	}
	s.fence = natsFence(s.backend.(*natsbackend.Backend), own)
	s.readName, s.read = "KV Get", func(ctx context.Context) error {
		_, err := kv.Get(ctx, "bench-read")
		if err == jetstream.ErrKeyNotFound {
			err = nil
		}
		return err
	}
	s.writeName, s.write = "KV Create", func(ctx context.Context) error {
		_, err := kv.Create(ctx, fmt.Sprintf("bench-write-%d", seq.Add(1)), []byte("v"))
		return err
	}
	s.requestsName = "messages sent by the main connection (client statistics)"
	s.requests = func(context.Context) (int64, error) { return int64(nc.Stats().OutMsgs), nil }
	s.peers = natsPeers(srv.URL())
	return s, nil
}
