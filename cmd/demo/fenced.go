package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	goredis "github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/dial"
	"github.com/hustings/hustings/backends/etcd"
	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/backends/nats"
	"github.com/hustings/hustings/backends/postgres"
	"github.com/hustings/hustings/backends/redis"
	"github.com/hustings/hustings/backends/zookeeper"
	"github.com/hustings/hustings/backends/zookeeper/zkdial"
	"github.com/hustings/hustings/events"
)

// fencedKey is one value in the lock's own store, written only under the
// backend's native fence: the operator scenario's resource. put writes
// value under the lock name's term token, and returns an error matching
// backends.ErrNotHeld, writing nothing, once that term is over; get
// reads the value back.
type fencedKey struct {
	put   func(ctx context.Context, name string, token events.Token, value string) error
	get   func(ctx context.Context) (string, error)
	close func()
}

// openFencedKey returns a key for the lock name's resource in the store of
// b, which t names, through the store's own client beside the one b uses,
// as a service's writes would.
func openFencedKey(ctx context.Context, t dial.Target, b backends.Backend, name string) (*fencedKey, error) {
	key := name + "/spec"
	notHeld := func(name string, token events.Token) error {
		return fmt.Errorf("%w: %q under token %d", backends.ErrNotHeld, name, token)
	}
	switch mb := b.(type) {
	case *memory.Backend:
		var stored atomic.Value // the store is this process; the fence holds its lock
		stored.Store("")
		return &fencedKey{
			put: func(ctx context.Context, name string, token events.Token, value string) error {
				return mb.Fence(ctx, name, token, func() error { stored.Store(value); return nil })
			},
			get:   func(context.Context) (string, error) { return stored.Load().(string), nil },
			close: func() {},
		}, nil
	case *etcd.Backend:
		cli, err := clientv3.New(clientv3.Config{Endpoints: t.Hosts, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			return nil, err
		}
		return &fencedKey{
			put: func(ctx context.Context, name string, token events.Token, value string) error {
				resp, err := cli.Txn(ctx).If(mb.Fence(name, token)).Then(clientv3.OpPut(key, value)).Commit()
				switch {
				case err != nil:
					return err
				case !resp.Succeeded:
					return notHeld(name, token)
				}
				return nil
			},
			get: func(ctx context.Context) (string, error) {
				resp, err := cli.Get(ctx, key)
				if err != nil || len(resp.Kvs) == 0 {
					return "", err
				}
				return string(resp.Kvs[0].Value), nil
			},
			close: func() { cli.Close() },
		}, nil
	case *postgres.Backend:
		pool, err := pgxpool.New(ctx, t.DSN)
		if err != nil {
			return nil, err
		}
		if _, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS hustings_demo_resource (key text PRIMARY KEY, value text NOT NULL)`); err != nil {
			pool.Close()
			return nil, err
		}
		return &fencedKey{
			put: func(ctx context.Context, name string, token events.Token, value string) error {
				return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
					if err := mb.Fence(ctx, tx, name, token); err != nil {
						return err // the transaction rolls back
					}
					_, err := tx.Exec(ctx, `INSERT INTO hustings_demo_resource VALUES ($1, $2)
ON CONFLICT (key) DO UPDATE SET value = excluded.value`, key, value)
					return err
				})
			},
			get: func(ctx context.Context) (string, error) {
				var v string
				err := pool.QueryRow(ctx, `SELECT value FROM hustings_demo_resource WHERE key = $1`, key).Scan(&v)
				return v, err
			},
			close: pool.Close,
		}, nil
	case *redis.Backend:
		rdb := goredis.NewClient(&goredis.Options{Addr: t.Hosts[0], DB: t.DB})
		k := redis.HashTag(name) + ":spec" // in the lock's hash slot, as Fence asks
		return &fencedKey{
			put: func(ctx context.Context, name string, token events.Token, value string) error {
				_, err := mb.Fence(ctx, name, token, "return redis.call('SET', KEYS[1], ARGV[1])", []string{k}, value)
				return err
			},
			get: func(ctx context.Context) (string, error) {
				v, err := rdb.Get(ctx, k).Result()
				if errors.Is(err, goredis.Nil) {
					return "", nil
				}
				return v, err
			},
			close: func() { rdb.Close() },
		}, nil
	case *zookeeper.Backend:
		conn, _, err := zk.Connect(t.Hosts, zkdial.SessionTimeout, zk.WithLogger(quietZK{}))
		if err != nil {
			return nil, err
		}
		path := "/hustings-demo-" + url.PathEscape(key)
		if _, err := conn.Create(path, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			conn.Close()
			return nil, err
		}
		return &fencedKey{
			put: func(ctx context.Context, name string, token events.Token, value string) error {
				_, err := mb.Fence(ctx, name, token, &zk.SetDataRequest{Path: path, Data: []byte(value), Version: -1})
				return err
			},
			get: func(context.Context) (string, error) {
				data, _, err := conn.Get(path)
				return string(data), err
			},
			close: func() {
				_ = conn.Delete(path, -1)
				conn.Close()
			},
		}, nil
	case *nats.Backend:
		return natsFencedKey(ctx, t, mb, key)
	}
	return nil, fmt.Errorf("the operator scenario has no native fence for the %s backend", t.Scheme)
}

// natsFencedKey is a key of the NATS backend's own bucket, written by
// nats.Backend.Fence.
func natsFencedKey(ctx context.Context, t dial.Target, mb *nats.Backend, key string) (*fencedKey, error) {
	servers := make([]string, len(t.Hosts))
	for i, h := range t.Hosts {
		servers[i] = "nats://" + h
	}
	nc, err := natsgo.Connect(strings.Join(servers, ","))
	if err != nil {
		return nil, err
	}
	bucket := t.Bucket
	if bucket == "" {
		bucket = nats.DefaultBucket
	}
	js, err := jetstream.New(nc)
	var kv jetstream.KeyValue
	if err == nil {
		kv, err = js.KeyValue(ctx, bucket)
	}
	if err != nil {
		nc.Close()
		return nil, err
	}
	k := "demo." + strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, key)
	return &fencedKey{
		put: func(ctx context.Context, name string, token events.Token, value string) error {
			_, err := mb.Fence(ctx, name, token, k, []byte(value))
			return err
		},
		get: func(ctx context.Context) (string, error) {
			e, err := kv.Get(ctx, k)
			if errors.Is(err, jetstream.ErrKeyNotFound) {
				return "", nil
			}
			if err != nil {
				return "", err
			}
			return string(e.Value()), nil
		},
		close: nc.Close,
	}, nil
}

// quietZK discards the ZooKeeper client's own log lines, as dial does.
type quietZK struct{}

func (quietZK) Printf(string, ...any) {}
