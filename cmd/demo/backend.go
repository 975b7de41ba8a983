package main

import (
	"context"
	"fmt"
	"os"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/dial"
	"github.com/hustings/hustings/backends/etcd"
	"github.com/hustings/hustings/backends/etcd/etcdtest"
)

// backendUsage lists the accepted --backend URLs, for help texts.
const backendUsage = dial.Usage + " | etcd-embedded"

// openBackend connects to the backend raw names, the one place every
// command opens a --backend URL: package dial's URLs, and etcd-embedded
// for an etcd server inside this process. close releases what it opened.
func openBackend(ctx context.Context, raw string) (b backends.Backend, close func(), err error) {
	if raw == "etcd-embedded" {
		return openEmbeddedEtcd()
	}
	return dial.Open(ctx, raw)
}

// openEmbeddedEtcd starts an etcd server in this process, in a temp dir.
func openEmbeddedEtcd() (backends.Backend, func(), error) {
	dir, err := os.MkdirTemp("", "hustings-etcd-")
	if err != nil {
		return nil, nil, err
	}
	srv, err := etcdtest.StartServer(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, fmt.Errorf("embedded etcd: %w", err)
	}
	cli, err := etcdtest.NewClient(srv.Addr())
	if err != nil {
		srv.Stop()
		os.RemoveAll(dir)
		return nil, nil, fmt.Errorf("embedded etcd: %w", err)
	}
	b, err := etcd.New(cli)
	if err != nil {
		cli.Close()
		srv.Stop()
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return b, func() { cli.Close(); srv.Stop(); os.RemoveAll(dir) }, nil
}
