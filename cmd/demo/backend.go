package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	goredis "github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/etcd"
	"github.com/hustings/hustings/backends/etcd/etcdtest"
	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/backends/redis"
	"github.com/hustings/hustings/backends/zookeeper"
	"github.com/hustings/hustings/backends/zookeeper/zktest"
)

// errBackendURL is wrapped by every error about a --backend URL.
var errBackendURL = errors.New("bad backend URL")

// backendUsage lists the accepted --backend URLs, for help texts.
const backendUsage = "memory | redis://host:port[/db] | etcd://host:port[,host:port…] | zk://host:port[,host:port…][/root] | etcd-embedded"

// zkSessionTimeout is the ZooKeeper session the demo asks for; TTLs must
// not exceed it.
const zkSessionTimeout = 4 * time.Second

// openBackend connects to the backend raw names, the one place every
// command parses a --backend URL. close releases what it opened.
func openBackend(ctx context.Context, raw string) (b backends.Backend, close func(), err error) {
	if raw == "" || raw == "memory" {
		return memory.New(), func() {}, nil
	}
	if raw == "etcd-embedded" {
		return openEmbeddedEtcd()
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("%w %q: %v", errBackendURL, raw, err)
	}
	switch u.Scheme {
	case "redis":
		return openRedis(ctx, u)
	case "etcd":
		return openEtcd(u)
	case "zk":
		return openZooKeeper(u)
	}
	return nil, nil, fmt.Errorf("%w %q: scheme %q is not one of memory, redis, etcd, zk, etcd-embedded", errBackendURL, raw, u.Scheme)
}

// hosts checks a comma-separated host:port list.
func hosts(u *url.URL) ([]string, error) {
	if u.Host == "" {
		return nil, fmt.Errorf("%w %q: no host:port", errBackendURL, u.Redacted())
	}
	list := strings.Split(u.Host, ",")
	for _, h := range list {
		host, port, err := net.SplitHostPort(h)
		if err != nil || host == "" {
			return nil, fmt.Errorf("%w %q: %q is not host:port", errBackendURL, u.Redacted(), h)
		}
		if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
			return nil, fmt.Errorf("%w %q: port %q is not a number from 1 to 65535", errBackendURL, u.Redacted(), port)
		}
	}
	return list, nil
}

func openRedis(ctx context.Context, u *url.URL) (backends.Backend, func(), error) {
	list, err := hosts(u)
	if err != nil {
		return nil, nil, err
	}
	if len(list) != 1 {
		return nil, nil, fmt.Errorf("%w %q: redis takes one host:port", errBackendURL, u.Redacted())
	}
	db := 0
	if p := strings.Trim(u.Path, "/"); p != "" {
		if db, err = strconv.Atoi(p); err != nil || db < 0 {
			return nil, nil, fmt.Errorf("%w %q: database %q is not a number", errBackendURL, u.Redacted(), p)
		}
	}
	rdb := goredis.NewClient(&goredis.Options{Addr: list[0], DB: db, ContextTimeoutEnabled: true})
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		return nil, nil, fmt.Errorf("redis at %s: %w", list[0], err)
	}
	b, err := redis.New(rdb)
	if err != nil {
		rdb.Close()
		return nil, nil, err
	}
	return b, func() { rdb.Close() }, nil
}

func openEtcd(u *url.URL) (backends.Backend, func(), error) {
	list, err := hosts(u)
	if err != nil {
		return nil, nil, err
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: list, DialTimeout: 5 * time.Second})
	if err != nil {
		return nil, nil, fmt.Errorf("etcd at %s: %w", u.Host, err)
	}
	b, err := etcd.New(cli)
	if err != nil {
		cli.Close()
		return nil, nil, err
	}
	return b, func() { cli.Close() }, nil
}

func openZooKeeper(u *url.URL) (backends.Backend, func(), error) {
	list, err := hosts(u)
	if err != nil {
		return nil, nil, err
	}
	conn, _, err := zk.Connect(list, zkSessionTimeout, zk.WithLogInfo(false))
	if err != nil {
		return nil, nil, fmt.Errorf("zookeeper at %s: %w", u.Host, err)
	}
	// Connect returns before the session exists; one-shot runs need it.
	if err := zktest.WaitSession(conn, 10*time.Second); err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("zookeeper at %s: %w", u.Host, err)
	}
	opts := []zookeeper.Option{zookeeper.WithSessionTimeout(zkSessionTimeout)}
	if root := strings.TrimRight(u.Path, "/"); root != "" {
		opts = append(opts, zookeeper.WithRoot(root))
	}
	b, err := zookeeper.New(conn, opts...)
	if err != nil {
		conn.Close()
		return nil, nil, err
	}
	return b, conn.Close, nil
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
