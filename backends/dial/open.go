package dial

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	goredis "github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/etcd"
	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/backends/postgres"
	"github.com/hustings/hustings/backends/redis"
	"github.com/hustings/hustings/backends/zookeeper"
	"github.com/hustings/hustings/internal/human"
)

// DefaultTimeout is how long Open waits for the server to answer, unless
// WithTimeout says otherwise.
const DefaultTimeout = 5 * time.Second

// Option configures Open.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	timeout time.Duration
	logger  *slog.Logger
}

// WithTimeout bounds how long Open waits for the server to answer (the
// dial timeout): a connection and one request (Redis PING, an etcd read,
// a ZooKeeper session). Default DefaultTimeout, 5 s; it must be > 0.
func WithTimeout(d time.Duration) Option { return optionFunc(func(c *config) { c.timeout = d }) }

// WithLogger sends the log lines of the client Open makes to l, at debug
// level, with the attribute client (redis, etcd or zookeeper). Default:
// discarded. go-zookeeper and the etcd client take a logger per client.
// go-redis has one per process: Open installs, once, a logger that sends
// the lines about this client (its failed dials, and what is logged
// during its calls) to l, and every other line where go-redis would have
// sent it (stderr); a program that calls redis.SetLogger after Open
// replaces it and gets every line.
func WithLogger(l *slog.Logger) Option { return optionFunc(func(c *config) { c.logger = l }) }

// Open parses raw and connects; see Target.Open.
func Open(ctx context.Context, raw string, opts ...Option) (b backends.Backend, close func(), err error) {
	t, err := Parse(raw)
	if err != nil {
		return nil, nil, err
	}
	return t.Open(ctx, opts...)
}

// errTimeout is the cause of Open's context when its dial timeout ran out.
var errTimeout = errors.New("dial timeout")

// Open connects to the target and waits until the server answers, at most
// the dial timeout or until ctx ends, then returns the backend and a
// function that closes its client. The client does not depend on ctx once
// Open returned. Errors match ErrUnreachable when the server did not
// answer, and backends.ErrInvalid for a bad option.
func (t Target) Open(ctx context.Context, opts ...Option) (b backends.Backend, close func(), err error) {
	cfg := config{timeout: DefaultTimeout}
	for _, o := range opts {
		if o != nil {
			o.apply(&cfg)
		}
	}
	if cfg.timeout <= 0 {
		return nil, nil, fmt.Errorf("%w: dial: timeout %v must be > 0", backends.ErrInvalid, cfg.timeout)
	}
	if cfg.logger == nil {
		cfg.logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithTimeoutCause(ctx, cfg.timeout, errTimeout)
	defer cancel()
	switch t.Scheme {
	case "memory":
		return memory.New(), func() {}, nil
	case "redis":
		return t.openRedis(ctx, cfg)
	case "etcd":
		return t.openEtcd(ctx, cfg)
	case "zk":
		return t.openZooKeeper(ctx, cfg)
	case "postgres":
		return t.openPostgres(ctx, cfg)
	case "mysql":
		return t.openMySQL(ctx, cfg)
	case "nats":
		return t.openNATS(ctx, cfg)
	}
	if t.opener != nil {
		u, err := url.Parse(t.raw)
		if err != nil {
			return nil, nil, fmt.Errorf("%w %s: %v", ErrURL, t.Redacted(), err)
		}
		return t.opener.Open(ctx, u, Config{Timeout: cfg.timeout, Logger: cfg.logger})
	}
	return nil, nil, fmt.Errorf("%w: scheme %q", ErrURL, t.Scheme)
}

// unreachable is Open's one-line error when the server did not answer:
// the URL, how long Open waited if the dial timeout ran out, and the cause
// (the last failed dial of a client that retries on its own, else err).
func (t Target) unreachable(ctx context.Context, cfg config, lastDial, err error) error {
	within := ""
	if context.Cause(ctx) == errTimeout {
		within = " within " + human.Duration(cfg.timeout)
	}
	cause := err
	if ctx.Err() != nil {
		switch {
		case lastDial != nil:
			cause = lastDial
		case err != nil && !isContextErr(err):
			cause = err // what the client saw, such as an i/o timeout
		case context.Cause(ctx) == errTimeout:
			cause = errors.New("no answer")
		default:
			cause = context.Cause(ctx)
		}
	}
	return fmt.Errorf("%w %s%s: %w", ErrUnreachable, t.Redacted(), within, cause)
}

// isContextErr reports whether err says only that a context ended, as
// itself or as a gRPC status.
func isContextErr(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return true
	}
	c := status.Code(err)
	return c == codes.DeadlineExceeded || c == codes.Canceled
}

func (t Target) openRedis(ctx context.Context, cfg config) (backends.Backend, func(), error) {
	routeRedisLogs()
	// ContextTimeoutEnabled: without it go-redis does not interrupt a
	// blocked read when the call's context ends.
	// The dialer is go-redis's default (a 5-minute TCP keep-alive), its
	// errors marked for the log router.
	d := &dialer{d: net.Dialer{Timeout: cfg.timeout, KeepAlive: 5 * time.Minute}}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, markedError{err: err, l: cfg.logger}
		}
		return c, nil
	}
	rdb := goredis.NewClient(&goredis.Options{Addr: t.Hosts[0], DB: t.DB, ContextTimeoutEnabled: true, DialTimeout: cfg.timeout, Dialer: dial})
	rdb.AddHook(redisHook{l: cfg.logger})
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		if rerr := goredis.Error(nil); errors.As(err, &rerr) { // the server answered, with an error
			return nil, nil, fmt.Errorf("dial: %s: %w", t, err)
		}
		return nil, nil, t.unreachable(ctx, cfg, d.lastErr(), err)
	}
	b, err := redis.New(rdb)
	if err != nil {
		rdb.Close()
		return nil, nil, err
	}
	return b, func() { rdb.Close() }, nil
}

func (t Target) openEtcd(ctx context.Context, cfg config) (backends.Backend, func(), error) {
	d := &dialer{}
	// No Context in the config: the client must outlive Open's ctx.
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   t.Hosts,
		DialTimeout: cfg.timeout,
		Logger:      zapLogger(cfg.logger),
		DialOptions: []grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return d.DialContext(ctx, "tcp", addr)
		})},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("dial: %s: %w", t, err)
	}
	// A linearizable read: the cluster answers and has a leader.
	if _, err := cli.Get(ctx, "hustings-dial-check", clientv3.WithCountOnly()); err != nil {
		cli.Close()
		return nil, nil, t.unreachable(ctx, cfg, d.lastErr(), err)
	}
	b, err := etcd.New(cli)
	if err != nil {
		cli.Close()
		return nil, nil, err
	}
	return b, func() { cli.Close() }, nil
}

func (t Target) openZooKeeper(ctx context.Context, cfg config) (backends.Backend, func(), error) {
	d := &dialer{}
	dial := func(network, addr string, timeout time.Duration) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		return d.DialContext(ctx, network, addr)
	}
	conn, _, err := zk.Connect(t.Hosts, ZooKeeperSessionTimeout, zk.WithLogger(zkLogger{cfg.logger}), zk.WithDialer(dial))
	if err != nil {
		return nil, nil, fmt.Errorf("dial: %s: %w", t, err)
	}
	// Connect returns before the session exists; one-shot runs need it.
	if err := waitSession(ctx, conn); err != nil {
		conn.Close()
		return nil, nil, t.unreachable(ctx, cfg, d.lastErr(), err)
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

// waitSession waits until ctx ends for conn's first session.
func waitSession(ctx context.Context, conn *zk.Conn) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for conn.State() != zk.StateHasSession {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return fmt.Errorf("no session (state %v)", conn.State())
		}
	}
	return nil
}

// openPostgres makes a pool of the URL, waits for one connection, and
// runs postgres.Migrate (idempotent): the tables are made on first use.
// Behind a transaction pooler, whose LISTEN does not work, build the
// pool yourself and call postgres.New with postgres.WithListener.
func (t Target) openPostgres(ctx context.Context, cfg config) (backends.Backend, func(), error) {
	pcfg, err := pgxpool.ParseConfig(t.DSN)
	if err != nil {
		return nil, nil, fmt.Errorf("dial: %s: %w", t.Redacted(), err)
	}
	pcfg.ConnConfig.ConnectTimeout = cfg.timeout
	pool, err := pgxpool.NewWithConfig(context.WithoutCancel(ctx), pcfg)
	if err != nil {
		return nil, nil, fmt.Errorf("dial: %s: %w", t.Redacted(), err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		var pe *pgconn.PgError
		if errors.As(err, &pe) { // the server answered, with an error
			return nil, nil, fmt.Errorf("dial: %s: %w", t.Redacted(), err)
		}
		return nil, nil, t.unreachable(ctx, cfg, nil, oneLine{err})
	}
	if err := postgres.Migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, nil, fmt.Errorf("dial: %s: %w", t.Redacted(), err)
	}
	b, err := postgres.New(pool)
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	return b, pool.Close, nil
}

// oneLine is an error whose message (pgx lists each address it tried on
// a line of its own) is one line.
type oneLine struct{ err error }

func (o oneLine) Error() string {
	return strings.Join(strings.Fields(strings.ReplaceAll(o.err.Error(), "\n", "; ")), " ")
}

func (o oneLine) Unwrap() error { return o.err }
