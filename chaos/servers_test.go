package chaos

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/nats-io/nats.go/jetstream"
	goredis "github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hustings/hustings/backends/etcd"
	"github.com/hustings/hustings/backends/etcd/etcdtest"
	"github.com/hustings/hustings/backends/mysql/mysqltest"
	natsbackend "github.com/hustings/hustings/backends/nats"
	"github.com/hustings/hustings/backends/nats/natstest"
	"github.com/hustings/hustings/backends/postgres/pgtest"
	"github.com/hustings/hustings/backends/redis"
	"github.com/hustings/hustings/backends/redis/redistest"
	"github.com/hustings/hustings/backends/zookeeper/zktest"
	"github.com/hustings/hustings/events"
)

// server is one real backend server for a run, started by the test.
type server struct {
	addr string
	// url is the backend's URL (package dial's) for a client reaching the
	// server at addr: the server's own, or a link's.
	url func(addr string) string
	// down stops the server abruptly; up starts it again on the same port
	// and data, waiting until it serves.
	down func()
	up   func() error
	// tamper deletes the lock name on the server behind its holder's
	// back, as an operator's delete would (the holder's node or key), but
	// only the term of token: a delete that landed late (a slow server)
	// and ended a later holder's term would be an overlap the checker
	// rightly does not excuse, since the fault named the earlier holder.
	// It reports an error when it deleted nothing.
	tamper func(ctx context.Context, name string, token events.Token) error
}

// backend describes how to run one backend in the chaos suite.
type backend struct {
	name  string
	start func(t *testing.T) server
	// slack is how much later than TTL + retry a crashed leader's
	// successor may be elected: the server's expiry granularity.
	slack time.Duration
	// handover is how long after a leader's graceful stop the next may be
	// elected in the long profile, if not the design's 50 ms: the time a
	// backend's own writes take when they cannot fit in it.
	handover time.Duration
	// pushed: the backend's sessions push a lock's loss (a watch on their
	// own keys), so a tampered leader learns of it at once, not at its
	// next renewal.
	pushed bool
}

// backends are the real backends the suite runs against.
var backendsUnderTest = []backend{
	{name: "redis", start: startRedis, slack: 300 * time.Millisecond},
	// etcd checks for expired leases every 500 ms.
	{name: "etcd", start: startEtcd, slack: 800 * time.Millisecond, pushed: true},
	{name: "zookeeper", start: startZooKeeper, slack: 300 * time.Millisecond, pushed: true},
	{name: "postgres", start: startPostgres, slack: 300 * time.Millisecond},
	// A handover is one update of the lock Lease, naming the next waiter
	// in line, and the watch's delivery: the design's 50 ms.
	{name: "kubernetes", start: startKubernetes, slack: 300 * time.Millisecond, pushed: true},
	// MySQL cannot notify: a waiter in another process sees a graceful
	// release at its next poll (dial's default, 1 s).
	{name: "mysql", start: startMySQL, slack: 300 * time.Millisecond, handover: 1200 * time.Millisecond},
	// Session records expire by the server's per-key TTL, in whole
	// seconds (the TTL here is 2 s), and the expiry marker is pushed.
	{name: "nats", start: startNATS, slack: 300 * time.Millisecond, pushed: true},
	// DynamoDB (dynalite in tests) has no clock and no stream: leases are
	// judged client-side and waiters poll (1 s).
	{name: "dynamodb", start: startDynamoDB, slack: 1200 * time.Millisecond, handover: 1200 * time.Millisecond},
	// MongoDB (FerretDB in tests) has no change stream here: waiters poll (1 s).
	{name: "mongodb", start: startMongoDB, slack: 300 * time.Millisecond, handover: 1200 * time.Millisecond},
	// Consul invalidates a session up to 2×TTL after its last renewal.
	{name: "consul", start: startConsul, slack: 2300 * time.Millisecond, pushed: true},
}

// startRedis runs a durable redis-server: a restart loses nothing it
// acknowledged, as a production primary with appendfsync always. (A
// restart that loses data can give two leaders for up to a keep-alive
// interval; the Redis backend's docs say so, and fencing covers it.)
func startRedis(t *testing.T) server {
	s := redistest.Start(t, redistest.Durable())
	rdb := goredis.NewClient(&goredis.Options{Addr: s.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { rdb.Close() })
	return server{
		addr: s.Addr(),
		url:  func(a string) string { return "redis://" + a },
		down: s.Kill,
		up:   s.Restart,
		tamper: func(ctx context.Context, name string, token events.Token) error {
			// A raw DEL publishes nothing: waiters find out by polling.
			key := redis.DefaultPrefix + ":{" + name + "}:lock"
			n, err := delTerm.Run(ctx, rdb, []string{key}, strconv.FormatUint(uint64(token), 10)).Int()
			if err == nil && n != 1 {
				err = fmt.Errorf("no lock %s under token %d to delete", key, token)
			}
			return err
		},
	}
}

// delTerm deletes KEYS[1] if its value (a Redis lock's "<token> s|h
// <session>") starts with the token ARGV[1].
var delTerm = goredis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v and string.match(v, '^%d+') == ARGV[1] then
	return redis.call('DEL', KEYS[1])
end
return 0`)

// startEtcd runs an embedded etcd server in the test process; nodes reach
// it through their links like any other server.
func startEtcd(t *testing.T) server {
	s := etcdtest.Start(t)
	cli := s.Client(t)
	tampers := 0
	return server{
		addr: s.Addr(),
		url:  func(a string) string { return "etcd://" + a },
		down: s.Stop,
		up:   s.Restart,
		tamper: func(ctx context.Context, name string, token events.Token) error {
			// Every other time the lease of the holder's session is
			// revoked instead of the key deleted: it goes with the lease.
			// The token is the key's create revision.
			key := etcd.DefaultPrefix + "lock/" + name
			if tampers++; tampers%2 == 0 {
				resp, err := cli.Get(ctx, key)
				if err != nil || len(resp.Kvs) == 0 || resp.Kvs[0].Lease == 0 || resp.Kvs[0].CreateRevision != int64(token) {
					return fmt.Errorf("no lease to revoke for %s under token %d: %+v, %v", key, token, resp, err)
				}
				// The lease is the target's session's: revoking it late
				// ends no other session's term.
				_, err = cli.Revoke(ctx, clientv3.LeaseID(resp.Kvs[0].Lease))
				return err
			}
			resp, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", int64(token))).Then(clientv3.OpDelete(key)).Commit()
			if err == nil && !resp.Succeeded {
				err = fmt.Errorf("no lock %s under token %d to delete", key, token)
			}
			return err
		},
	}
}

// startZooKeeper runs a ZooKeeper server process (tickTime 200 ms).
func startZooKeeper(t *testing.T) server {
	s := zktest.Start(t)
	var conn *zk.Conn // dialled at the first tamper, after the nodes made the root
	t.Cleanup(func() {
		if conn != nil {
			conn.Close()
		}
	})
	return server{
		addr: s.Addr(),
		url:  func(a string) string { return "zk://" + a + "/chaos" },
		down: s.Stop,
		up:   s.Restart,
		tamper: func(ctx context.Context, name string, token events.Token) error {
			if conn == nil {
				c, err := zktest.Dial(s.Addr(), 4*time.Second)
				if err != nil {
					return err
				}
				conn = c
			}
			return deleteTermNode(conn, "/chaos/locks/"+url.PathEscape(name), token)
		},
	}
}

// startPostgres runs a PostgreSQL cluster of its own (package pgtest):
// down is a crash (SIGKILL), up crash recovery on the same data.
func startPostgres(t *testing.T) server {
	s := pgtest.Start(t)
	pool := pgtest.Pool(t, s.DSN())
	return server{
		addr: s.Addr(),
		url:  pgtest.DSN,
		down: s.Kill,
		up:   s.Restart,
		tamper: func(ctx context.Context, name string, token events.Token) error {
			// A raw DELETE NOTIFYs nothing: waiters find out by their
			// timers or by polling, the holder at its next keep-alive.
			tag, err := pool.Exec(ctx, `DELETE FROM hustings.locks WHERE name = $1 AND token = $2`, name, int64(token))
			if err == nil && tag.RowsAffected() != 1 {
				err = fmt.Errorf("no lock row %q under token %d to delete", name, token)
			}
			return err
		},
	}
}

// startMySQL runs a MariaDB server of its own (package mysqltest): down
// is a crash (SIGKILL), up crash recovery on the same data.
func startMySQL(t *testing.T) server {
	s := mysqltest.Start(t)
	db := mysqltest.DB(t, s.DSN())
	return server{
		addr: s.Addr(),
		url:  func(a string) string { return "mysql://root@" + a + "/" + mysqltest.Database },
		down: s.Kill,
		up:   s.Restart,
		tamper: func(ctx context.Context, name string, token events.Token) error {
			res, err := db.ExecContext(ctx, `DELETE FROM hustings_locks WHERE name = ? AND token = ?`, name, int64(token))
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil || n != 1 {
				return fmt.Errorf("no lock row %q under token %d to delete (%v)", name, token, err)
			}
			return nil
		},
	}
}

// startNATS runs a nats-server process with JetStream (package natstest):
// down is a crash (SIGKILL), up a restart on the same store.
func startNATS(t *testing.T) server {
	s := natstest.Start(t)
	nc := natstest.Conn(t, s.URL())
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return server{
		addr: s.Addr(),
		url:  natstest.URL,
		down: s.Kill,
		up:   s.Restart,
		tamper: func(ctx context.Context, name string, token events.Token) error {
			// A delete of the lock's record, as `nats kv del` makes it:
			// the feed pushes it to the holder and the waiters. The
			// token is the revision of the take's write, which nothing
			// rewrites during the term.
			kv, err := js.KeyValue(ctx, natsbackend.DefaultBucket)
			if err != nil {
				return err
			}
			return kv.Delete(ctx, natsbackend.LockKey(name), jetstream.LastRevision(uint64(token)))
		},
	}
}

// deleteTermNode deletes the node under parent whose czxid is token (the
// holder's, if its term is still on), leaving a hold marker (a child
// without a sequence) alone.
func deleteTermNode(conn *zk.Conn, parent string, token events.Token) error {
	kids, _, err := conn.Children(parent)
	if err != nil {
		return err
	}
	for _, k := range kids {
		if !strings.Contains(k, "-") {
			continue
		}
		_, st, err := conn.Get(parent + "/" + k)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return err
		}
		if st.Czxid == int64(token) {
			return conn.Delete(parent+"/"+k, st.Version)
		}
	}
	return fmt.Errorf("no node in %s under token %d", parent, token)
}
