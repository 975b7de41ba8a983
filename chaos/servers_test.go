package chaos

import (
	"testing"
	"time"

	"github.com/hustings/hustings/backends/etcd/etcdtest"
	"github.com/hustings/hustings/backends/redis/redistest"
	"github.com/hustings/hustings/backends/zookeeper/zktest"
)

// server is one real backend server for a run, started by the test.
type server struct {
	addr string
	// url is the backend URL (package dial) for a client reaching the
	// server at addr: the server's own, or a link's.
	url func(addr string) string
	// down stops the server abruptly; up starts it again on the same port
	// and data, waiting until it serves.
	down func()
	up   func() error
}

// backend describes how to run one backend in the chaos suite.
type backend struct {
	name  string
	start func(t *testing.T) server
	// slack is how much later than TTL + retry a crashed leader's
	// successor may be elected: the server's expiry granularity.
	slack time.Duration
}

// backends are the real backends the suite runs against.
var backendsUnderTest = []backend{
	{name: "redis", start: startRedis, slack: 300 * time.Millisecond},
	// etcd checks for expired leases every 500 ms.
	{name: "etcd", start: startEtcd, slack: 800 * time.Millisecond},
	{name: "zookeeper", start: startZooKeeper, slack: 300 * time.Millisecond},
}

// startRedis runs a durable redis-server: a restart loses nothing it
// acknowledged, as a production primary with appendfsync always. (A
// restart that loses data can give two leaders for up to a keep-alive
// interval; the Redis backend's docs say so, and fencing covers it.)
func startRedis(t *testing.T) server {
	s := redistest.Start(t, redistest.Durable())
	return server{
		addr: s.Addr(),
		url:  func(a string) string { return "redis://" + a },
		down: s.Kill,
		up:   s.Restart,
	}
}

// startEtcd runs an embedded etcd server in the test process; nodes reach
// it through their links like any other server.
func startEtcd(t *testing.T) server {
	s := etcdtest.Start(t)
	return server{
		addr: s.Addr(),
		url:  func(a string) string { return "etcd://" + a },
		down: s.Stop,
		up:   s.Restart,
	}
}

// startZooKeeper runs a ZooKeeper server process (tickTime 200 ms).
func startZooKeeper(t *testing.T) server {
	s := zktest.Start(t)
	return server{
		addr: s.Addr(),
		url:  func(a string) string { return "zk://" + a + "/chaos" },
		down: s.Stop,
		up:   s.Restart,
	}
}
