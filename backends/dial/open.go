package dial

import (
	"context"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
	goredis "github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/etcd"
	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/backends/redis"
	"github.com/hustings/hustings/backends/zookeeper"
)

// Open connects to the target, waiting until the server answers or ctx
// ends, and returns the backend and a function that closes its client.
func (t Target) Open(ctx context.Context) (b backends.Backend, close func(), err error) {
	switch t.Scheme {
	case "memory":
		return memory.New(), func() {}, nil
	case "redis":
		return t.openRedis(ctx)
	case "etcd":
		return t.openEtcd(ctx)
	case "zk":
		return t.openZooKeeper(ctx)
	}
	return nil, nil, fmt.Errorf("%w: scheme %q", ErrURL, t.Scheme)
}

func (t Target) openRedis(ctx context.Context) (backends.Backend, func(), error) {
	// ContextTimeoutEnabled: without it go-redis does not interrupt a
	// blocked read when the call's context ends.
	rdb := goredis.NewClient(&goredis.Options{Addr: t.Hosts[0], DB: t.DB, ContextTimeoutEnabled: true})
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		return nil, nil, fmt.Errorf("dial: redis at %s: %w", t.Hosts[0], err)
	}
	b, err := redis.New(rdb)
	if err != nil {
		rdb.Close()
		return nil, nil, err
	}
	return b, func() { rdb.Close() }, nil
}

func (t Target) openEtcd(ctx context.Context) (backends.Backend, func(), error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: t.Hosts, DialTimeout: 5 * time.Second, Context: ctx})
	if err != nil {
		return nil, nil, fmt.Errorf("dial: etcd at %v: %w", t.Hosts, err)
	}
	b, err := etcd.New(cli)
	if err != nil {
		cli.Close()
		return nil, nil, err
	}
	return b, func() { cli.Close() }, nil
}

func (t Target) openZooKeeper(ctx context.Context) (backends.Backend, func(), error) {
	conn, _, err := zk.Connect(t.Hosts, ZooKeeperSessionTimeout, zk.WithLogInfo(false))
	if err != nil {
		return nil, nil, fmt.Errorf("dial: zookeeper at %v: %w", t.Hosts, err)
	}
	// Connect returns before the session exists; one-shot runs need it.
	if err := waitSession(ctx, conn); err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("dial: zookeeper at %v: %w", t.Hosts, err)
	}
	opts := []zookeeper.Option{zookeeper.WithSessionTimeout(ZooKeeperSessionTimeout)}
	if t.Root != "" {
		opts = append(opts, zookeeper.WithRoot(t.Root))
	}
	b, err := zookeeper.New(conn, opts...)
	if err != nil {
		conn.Close()
		return nil, nil, err
	}
	return b, conn.Close, nil
}

// waitSession waits up to 10 s, or until ctx ends, for conn's first
// session.
func waitSession(ctx context.Context, conn *zk.Conn) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for conn.State() != zk.StateHasSession {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return fmt.Errorf("no session (state %v): %w", conn.State(), ctx.Err())
		}
	}
	return nil
}
