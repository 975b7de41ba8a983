package zookeeper_test

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"

	"github.com/hustings/hustings/backends/zookeeper"
	"github.com/hustings/hustings/backends/zookeeper/zktest"
	"github.com/hustings/hustings/internal/faultlink"
)

// The package's tests share one server, started when first needed and
// killed after the last test, before the leak check: a JVM takes a second
// or two to start. Each test works under its own root.
var shared struct {
	once sync.Once
	dir  string
	srv  *zktest.Server
	err  error
}

// TestMain is goleak.VerifyTestMain with the shared server killed between
// the tests and the leak check.
func TestMain(m *testing.M) {
	code := m.Run()
	if shared.srv != nil {
		shared.srv.Stop()
	}
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	if code == 0 {
		if err := goleak.Find(faultlink.KnownLeaks()...); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: errors on successful test run: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// server returns the shared server, starting it on first use.
func server(tb testing.TB) *zktest.Server {
	tb.Helper()
	srv, err := sharedServer()
	if err != nil {
		tb.Fatal(err)
	}
	return srv
}

func sharedServer() (*zktest.Server, error) {
	shared.once.Do(func() {
		shared.dir, shared.err = os.MkdirTemp("", "zookeeper-test-")
		if shared.err == nil {
			shared.srv, shared.err = zktest.StartServer(shared.dir)
		}
	})
	return shared.srv, shared.err
}

// zkServers returns the address of the shared server, for Examples.
func zkServers() []string {
	srv, err := sharedServer()
	if err != nil {
		panic(err) // Examples cannot fail otherwise; the tests report it too
	}
	return []string{srv.Addr()}
}

// dial connects to addr with the given session timeout and closes the
// conn when the test ends.
func dial(tb testing.TB, addr string, timeout time.Duration) *zk.Conn {
	tb.Helper()
	conn, err := zktest.Dial(addr, timeout)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(conn.Close)
	return conn
}

// runID tells this run's roots from earlier runs' on a reused server.
var runID = fmt.Sprintf("%x", time.Now().UnixNano())

// roots holds the root of each test (testing.TB → string), and rootSeq
// numbers them: a test run again (-count) starts from an empty root.
var (
	roots   sync.Map
	rootSeq atomic.Int64
)

// root returns the root of the test: no other test or run uses it, and
// every Backend of the test shares it.
func root(tb testing.TB) string {
	if r, ok := roots.Load(tb); ok {
		return r.(string)
	}
	name := strings.NewReplacer("/", "-", " ", "-", "#", "-").Replace(tb.Name())
	r, _ := roots.LoadOrStore(tb, fmt.Sprintf("/test-%s/%s-%d", runID, name, rootSeq.Add(1)))
	return r.(string)
}

// newBackend returns a Backend on conn under its own root.
func newBackend(tb testing.TB, conn *zk.Conn, timeout time.Duration) *zookeeper.Backend {
	tb.Helper()
	b, err := zookeeper.New(conn, zookeeper.WithRoot(root(tb)), zookeeper.WithSessionTimeout(timeout))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}
