package main

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/hustings/hustings/backends"
	consulbackend "github.com/hustings/hustings/backends/consul"
	"github.com/hustings/hustings/backends/consul/consultest"
)

// startConsul starts a durable Consul server (package consultest: one
// server, its raft on disk, every write fsynced, as a production server
// keeps it), the backend on a client that counts its requests, and the
// api.Lock peer.
func startConsul() (*system, error) {
	srv, err := consultest.StartServer(consultest.Durable())
	if err != nil {
		return nil, err
	}
	s := &system{name: "consul", maxTTL: 30 * time.Second, closers: []func(){srv.Stop}}
	var sent atomic.Int64
	c, err := consulClient(srv.Addr(), &sent)
	if err != nil {
		return s, err
	}
	if s.backend, err = consulbackend.New(c); err != nil {
		return s, err
	}
	s.fence = consulFence(s.backend.(*consulbackend.Backend), c)
	s.fresh = func() (backends.Backend, func(), error) {
		c, err := consulClient(srv.Addr(), nil)
		if err != nil {
			return nil, nil, err
		}
		b, err := consulbackend.New(c)
		if err != nil {
			return nil, nil, err
		}
		return b, func() {}, nil
	}
	// The baseline write is what a Consul user's lock costs at least: one
	// KV acquire by a session, and its release.
	// The session lives through the whole run (a full run reaches this
	// workload minutes after the start): renewed every 15 s until the
	// system closes.
	sid, _, err := c.Session().Create(&api.SessionEntry{TTL: "30s", Behavior: api.SessionBehaviorDelete}, nil)
	if err != nil {
		return s, err
	}
	stopRenew := make(chan struct{})
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		c.Session().RenewPeriodic("30s", sid, nil, stopRenew)
	}()
	s.closers = append(s.closers, func() { close(stopRenew); <-renewed })
	s.readName, s.read = "KV Get", func(ctx context.Context) error {
		_, _, err := c.KV().Get("bench-read", (&api.QueryOptions{}).WithContext(ctx))
		return err
	}
	s.writeName, s.write = "KV acquire + release", func(ctx context.Context) error {
		kv := &api.KVPair{Key: fmt.Sprintf("bench-write-%d", seq.Add(1)), Value: []byte("v"), Session: sid}
		ok, _, err := c.KV().Acquire(kv, (&api.WriteOptions{}).WithContext(ctx))
		if err == nil && !ok {
			err = fmt.Errorf("acquire of a free key %s refused", kv.Key)
		}
		if err == nil {
			_, _, err = c.KV().Release(kv, (&api.WriteOptions{}).WithContext(ctx))
		}
		return err
	}
	s.requestsName = "HTTP requests sent by the main client (client count)"
	s.requests = func(context.Context) (int64, error) { return sent.Load(), nil }
	s.peers = consulPeers(srv.Addr())
	return s, nil
}

// consulClient returns a client of the HTTP API at addr keeping up to 128
// idle connections (see package consul's doc), counting its requests in
// sent unless it is nil.
func consulClient(addr string, sent *atomic.Int64) (*api.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 128
	var rt http.RoundTripper = tr
	if sent != nil {
		rt = countingTransport{tr, sent}
	}
	return api.NewClient(&api.Config{Address: addr, Scheme: "http", HttpClient: &http.Client{Transport: rt}})
}

// countingTransport counts the requests it sends.
type countingTransport struct {
	rt   http.RoundTripper
	sent *atomic.Int64
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.sent.Add(1)
	return c.rt.RoundTrip(r)
}
