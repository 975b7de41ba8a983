package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	goredis "github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/etcd"
	"github.com/hustings/hustings/backends/etcd/etcdtest"
	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/backends/mysql"
	"github.com/hustings/hustings/backends/mysql/mysqltest"
	"github.com/hustings/hustings/backends/postgres"
	"github.com/hustings/hustings/backends/postgres/pgtest"
	"github.com/hustings/hustings/backends/redis"
	"github.com/hustings/hustings/backends/redis/redistest"
	"github.com/hustings/hustings/backends/zookeeper"
	"github.com/hustings/hustings/backends/zookeeper/zktest"
)

// zkSessionTimeout is the ZooKeeper session timeout of every conn the
// bench opens; Hustings session TTLs on ZooKeeper may not exceed it.
const zkSessionTimeout = 4 * time.Second

// system is one backend under test: a server the bench started, a
// Hustings backend on a client of it, the server's plain round trips (the
// baselines), and the peer libraries that run on it.
type system struct {
	name    string
	backend backends.Backend // on the main client; share it for one candidate
	maxTTL  time.Duration    // the longest session TTL to use here
	// poll is how often a waiter in another process reads the lock it
	// waits for, where the backend cannot push a release (its default);
	// 0 where it can.
	poll time.Duration

	// fresh returns a backend on a client of its own (another candidate,
	// as if in another process) and its closer. The memory backend
	// returns itself: it is one process's store.
	fresh func() (backends.Backend, func(), error)
	// read and write are one plain round trip each (PING / Get / Exists;
	// SET NX / put-if-absent Txn / ephemeral sequential create); nil for
	// memory.
	read, write         func(ctx context.Context) error
	readName, writeName string
	// requests returns the server's count of requests handled so far
	// (commands, gRPC requests, packets); nil for memory.
	requests     func(ctx context.Context) (int64, error)
	requestsName string
	// redisClient is the main client of the Redis system, for redislock's
	// refresh loop in the scale workload.
	redisClient *goredis.Client
	// kube makes clients of the Kubernetes system, for client-go's
	// failover and scale; nil elsewhere.
	kube *kubeClients
	// fence makes the fenced-write workload's write: through the
	// backend's native fence, and without it.
	fence makeFence
	peers []peer
	// closers run in reverse order by stop.
	closers []func()
}

// stop closes the system's clients and stops its server.
func (s *system) stop() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
	s.closers = nil
}

// startSystems starts a server for each name (memory, redis, etcd,
// zookeeper, postgres, mysql, kubernetes, nats) under dir. On error it stops what it started.
func startSystems(ctx context.Context, dir string, names []string, logf func(string, ...any)) ([]*system, error) {
	var out []*system
	for _, n := range names {
		logf("starting %s", n)
		s, err := startSystem(ctx, filepath.Join(dir, n), n)
		if err != nil {
			for _, s := range out {
				s.stop()
			}
			return nil, fmt.Errorf("start %s: %w", n, err)
		}
		out = append(out, s)
	}
	return out, nil
}

func startSystem(ctx context.Context, dir, name string) (*system, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var s *system
	var err error
	switch name {
	case "memory":
		s = startMemory()
	case "redis":
		s, err = startRedis(dir)
	case "etcd":
		s, err = startEtcd(dir)
	case "zookeeper":
		s, err = startZooKeeper(dir)
	case "postgres":
		s, err = startPostgres()
	case "mysql":
		s, err = startMySQL()
	case "kubernetes":
		s, err = startKubernetes()
	case "nats":
		s, err = startNATS()
	case "dynamodb":
		s, err = startDynamoDB()
	case "mongodb":
		s, err = startMongoDB()
	case "consul":
		s, err = startConsul()
	default:
		return nil, fmt.Errorf("unknown backend %q", name)
	}
	if err != nil {
		if s != nil {
			s.stop()
		}
		return nil, err
	}
	return s, nil
}

func startMemory() *system {
	b := memory.New()
	return &system{
		name: "memory", backend: b, maxTTL: 30 * time.Second, fence: memoryFence(b),
		fresh: func() (backends.Backend, func(), error) { return b, func() {}, nil },
	}
}

// seq makes keys unique within the run.
var seq atomic.Int64

func startRedis(dir string) (*system, error) {
	srv, err := redistest.StartServer(dir)
	if err != nil {
		return nil, err
	}
	s := &system{name: "redis", maxTTL: 30 * time.Second, closers: []func(){srv.Stop}}
	client := goredis.NewClient(redistest.Options(srv.Addr()))
	s.closers = append(s.closers, func() { _ = client.Close() })
	s.redisClient = client
	if s.backend, err = redis.New(client); err != nil {
		return s, err
	}
	s.fence = redisFence(s.backend.(*redis.Backend), client)
	s.fresh = func() (backends.Backend, func(), error) {
		c := goredis.NewClient(redistest.Options(srv.Addr()))
		b, err := redis.New(c)
		if err != nil {
			_ = c.Close()
			return nil, nil, err
		}
		return b, func() { _ = c.Close() }, nil
	}
	s.readName, s.read = "PING", func(ctx context.Context) error { return client.Ping(ctx).Err() }
	s.writeName, s.write = "SET NX", func(ctx context.Context) error {
		return client.SetNX(ctx, fmt.Sprintf("bench:write:%d", seq.Add(1)), "v", time.Minute).Err()
	}
	s.requestsName = "commands (INFO commandstats)"
	s.requests = func(ctx context.Context) (int64, error) {
		calls, err := srv.CommandCalls(ctx)
		var n int64
		for cmd, c := range calls {
			if cmd != "info" {
				n += c
			}
		}
		return n, err
	}
	s.peers = redisPeers(srv.Addr())
	return s, nil
}

// requestCounter counts the gRPC requests an etcd client sends: unary
// calls, and each message sent on a stream (LeaseKeepAlive, Watch).
type requestCounter struct{ n atomic.Int64 }

func (c *requestCounter) dialOptions() []grpc.DialOption {
	unary := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		c.n.Add(1)
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	stream := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		cs, err := streamer(ctx, desc, cc, method, opts...)
		if err != nil {
			return nil, err
		}
		return countingStream{ClientStream: cs, n: &c.n}, nil
	}
	return []grpc.DialOption{grpc.WithChainUnaryInterceptor(unary), grpc.WithChainStreamInterceptor(stream)}
}

type countingStream struct {
	grpc.ClientStream
	n *atomic.Int64
}

func (s countingStream) SendMsg(m any) error {
	s.n.Add(1)
	return s.ClientStream.SendMsg(m)
}

func startEtcd(dir string) (*system, error) {
	srv, err := etcdtest.StartServer(dir)
	if err != nil {
		return nil, err
	}
	s := &system{name: "etcd", maxTTL: 30 * time.Second, closers: []func(){srv.Stop}}
	counter := &requestCounter{}
	newClient := func() (*clientv3.Client, error) { return etcdtest.NewClient(srv.Addr(), counter.dialOptions()...) }
	cli, err := newClient()
	if err != nil {
		return s, err
	}
	s.closers = append(s.closers, func() { _ = cli.Close() })
	if s.backend, err = etcd.New(cli); err != nil {
		return s, err
	}
	s.fence = etcdFence(s.backend.(*etcd.Backend), cli)
	s.fresh = func() (backends.Backend, func(), error) {
		c, err := newClient()
		if err != nil {
			return nil, nil, err
		}
		b, err := etcd.New(c)
		if err != nil {
			_ = c.Close()
			return nil, nil, err
		}
		return b, func() { _ = c.Close() }, nil
	}
	s.readName, s.read = "Get", func(ctx context.Context) error {
		_, err := cli.Get(ctx, "/bench/read")
		return err
	}
	s.writeName, s.write = "put-if-absent Txn", func(ctx context.Context) error {
		key := fmt.Sprintf("/bench/write/%d", seq.Add(1))
		_, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).Then(clientv3.OpPut(key, "v")).Commit()
		return err
	}
	s.requestsName = "gRPC requests sent (client interceptor)"
	s.requests = func(context.Context) (int64, error) { return counter.n.Load(), nil }
	s.peers = etcdPeers(newClient)
	return s, nil
}

func startZooKeeper(dir string) (*system, error) {
	srv, err := zktest.StartServer(dir)
	if err != nil {
		return nil, err
	}
	s := &system{name: "zookeeper", maxTTL: zkSessionTimeout, closers: []func(){srv.Stop}}
	conn, err := zktest.Dial(srv.Addr(), zkSessionTimeout)
	if err != nil {
		return s, err
	}
	s.closers = append(s.closers, conn.Close)
	if s.backend, err = zookeeper.New(conn, zookeeper.WithSessionTimeout(zkSessionTimeout)); err != nil {
		return s, err
	}
	s.fence = zkFence(s.backend.(*zookeeper.Backend), conn)
	s.fresh = func() (backends.Backend, func(), error) {
		c, err := zktest.Dial(srv.Addr(), zkSessionTimeout)
		if err != nil {
			return nil, nil, err
		}
		b, err := zookeeper.New(c, zookeeper.WithSessionTimeout(zkSessionTimeout))
		if err != nil {
			c.Close()
			return nil, nil, err
		}
		return b, c.Close, nil
	}
	acl := zk.WorldACL(zk.PermAll)
	if _, err := conn.Create("/bench-write", nil, 0, acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return s, err
	}
	if err := warmZooKeeper(conn, acl, zkWarmUp); err != nil {
		return s, err
	}
	s.readName, s.read = "Exists", func(context.Context) error {
		_, _, err := conn.Exists("/zookeeper")
		return err
	}
	s.writeName, s.write = "create ephemeral sequential", func(context.Context) error {
		_, err := conn.Create("/bench-write/n-", nil, zk.FlagEphemeral|zk.FlagSequence, acl)
		return err
	}
	s.requestsName = "packets received (mntr)"
	s.requests = func(context.Context) (int64, error) {
		m, err := srv.Mntr()
		return m["zk_packets_received"], err
	}
	s.peers = zkPeers(srv.Addr())
	return s, nil
}

// zkWarmUp is how long warmZooKeeper runs.
const zkWarmUp = 5 * time.Second

// warmZooKeeper runs the requests a lock makes (a sequential ephemeral
// create, a listing, a read with a watch, a delete) from eight goroutines
// for d, before anything is measured. The server is a JVM, which compiles
// its hot paths while they run: measured on one server, subjects taking
// turns got faster run after run (contended sections/s from 353 to 589
// over eight runs), so the subjects measured first, ours, ran on a colder
// server than the peers measured after them.
func warmZooKeeper(conn *zk.Conn, acl []zk.ACL, d time.Duration) error {
	if _, err := conn.Create("/bench-warm", nil, 0, acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return err
	}
	until := time.Now().Add(d)
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for time.Now().Before(until) {
				p, err := conn.Create("/bench-warm/n-", nil, zk.FlagEphemeral|zk.FlagSequence, acl)
				if err == nil {
					_, _, err = conn.Children("/bench-warm")
				}
				if err == nil {
					_, _, _, err = conn.GetW(p)
				}
				if err == nil {
					err = conn.Delete(p, -1)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// startPostgres starts a cluster of its own (package pgtest: in a
// temporary directory of its own, run as an unprivileged user under root),
// with fsync on, as in production.
func startPostgres() (*system, error) {
	srv, err := pgtest.StartServer(pgtest.Durable())
	if err != nil {
		return nil, err
	}
	s := &system{name: "postgres", maxTTL: 30 * time.Second, closers: []func(){srv.Stop}}
	newBackend := func() (backends.Backend, func(), error) {
		pool, err := pgtest.NewPool(srv.DSN())
		if err != nil {
			return nil, nil, err
		}
		b, err := postgres.New(pool)
		if err != nil {
			pool.Close()
			return nil, nil, err
		}
		return b, pool.Close, nil
	}
	counter := &pgStatements{}
	pool, err := counter.pool(srv.DSN())
	if err != nil {
		return s, err
	}
	s.closers = append(s.closers, pool.Close)
	ctx := context.Background()
	if err := postgres.Migrate(ctx, pool); err != nil {
		return s, err
	}
	if _, err := pool.Exec(ctx, "CREATE TABLE IF NOT EXISTS bench_write (k text PRIMARY KEY)"); err != nil {
		return s, err
	}
	if s.backend, err = postgres.New(pool); err != nil {
		return s, err
	}
	s.fence = pgFence(pool, s.backend.(*postgres.Backend))
	s.fresh = newBackend
	s.readName, s.read = "SELECT 1", func(ctx context.Context) error {
		_, err := pool.Exec(ctx, "SELECT 1")
		return err
	}
	s.writeName, s.write = "INSERT … ON CONFLICT DO NOTHING", func(ctx context.Context) error {
		_, err := pool.Exec(ctx, "INSERT INTO bench_write VALUES ($1) ON CONFLICT DO NOTHING", fmt.Sprintf("w%d", seq.Add(1)))
		return err
	}
	s.requestsName = "statements sent (pgx tracer)"
	s.requests = func(context.Context) (int64, error) { return counter.n.Load(), nil }
	s.peers = pgPeers(srv.DSN())
	return s, nil
}

// startMySQL starts a MariaDB server of its own (package mysqltest: in a
// temporary directory of its own, run as an unprivileged user under
// root), flushing its log at every commit, as in production.
func startMySQL() (*system, error) {
	srv, err := mysqltest.StartServer(mysqltest.Durable())
	if err != nil {
		return nil, err
	}
	s := &system{name: "mysql", maxTTL: 30 * time.Second, poll: defaultPoll, closers: []func(){srv.Stop}}
	open := func() (*sql.DB, error) {
		db, err := sql.Open("mysql", srv.DSN())
		if err == nil {
			db.SetMaxOpenConns(64)
			db.SetMaxIdleConns(64)
		}
		return db, err
	}
	s.fresh = func() (backends.Backend, func(), error) {
		db, err := open()
		if err != nil {
			return nil, nil, err
		}
		b, err := mysql.New(db)
		if err != nil {
			_ = db.Close()
			return nil, nil, err
		}
		return b, func() { _ = db.Close() }, nil
	}
	db, err := open()
	if err != nil {
		return s, err
	}
	s.closers = append(s.closers, func() { _ = db.Close() })
	ctx := context.Background()
	if err := mysql.Migrate(ctx, db); err != nil {
		return s, err
	}
	if _, err := db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS bench_write (k VARCHAR(64) PRIMARY KEY, n BIGINT NOT NULL)"); err != nil {
		return s, err
	}
	if s.backend, err = mysql.New(db); err != nil {
		return s, err
	}
	s.fence = mysqlFence(s.backend.(*mysql.Backend), db)
	s.readName, s.read = "SELECT 1", func(ctx context.Context) error {
		_, err := db.ExecContext(ctx, "SELECT 1")
		return err
	}
	s.writeName, s.write = "INSERT … ON DUPLICATE KEY UPDATE", func(ctx context.Context) error {
		_, err := db.ExecContext(ctx, "INSERT INTO bench_write VALUES (?, 1) ON DUPLICATE KEY UPDATE n = n + 1", fmt.Sprintf("w%d", seq.Add(1)))
		return err
	}
	s.peers = mysqlPeers(srv.DSN())
	return s, nil
}

// pgStatements counts the statements a pool sends, as etcd's interceptor
// counts its requests. Not the server's pg_stat_database: a backend that
// goes idle within a second of its last report holds its counts back for
// ten seconds (PostgreSQL's PGSTAT_IDLE_INTERVAL), so the start-up
// storm's acquires landed inside a later hold window (1,759 transactions
// a second at 10,000 campaigns in one run, 49 in another).
type pgStatements struct{ n atomic.Int64 }

// pool returns a pool like pgtest.NewPool's whose statements p counts.
func (p *pgStatements) pool(dsn string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = 16
	cfg.ConnConfig.Tracer = p
	return pgxpool.NewWithConfig(context.Background(), cfg)
}

// TraceQueryStart counts one statement.
func (p *pgStatements) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	p.n.Add(1)
	return ctx
}

// TraceQueryEnd does nothing.
func (p *pgStatements) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// defaultPoll is the poll of the backends whose waiters poll (MySQL,
// MongoDB, DynamoDB) when the caller sets none.
const defaultPoll = time.Second
