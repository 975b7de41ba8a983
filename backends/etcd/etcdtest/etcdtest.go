// Package etcdtest runs an etcd server embedded in the process, for the
// tests and benchmarks of the etcd backend: on free loopback ports, with a
// data directory that survives Restart, its logs discarded. For tests and
// benchmarks only.
//
// Start is for tests (it stops the server when the test ends); StartServer
// and Stop are for code without a testing.TB, such as benchmarks in
// another module. A Server is safe for concurrent use.
package etcdtest

import (
	"fmt"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/hustings/hustings/internal/faultlink"
	"github.com/hustings/hustings/internal/testserver"
)

// readyTimeout bounds how long a start waits for the server to serve.
const readyTimeout = 30 * time.Second

// Server is one embedded etcd member (a cluster of one).
type Server struct {
	dir        string
	clientPort int
	peerPort   int

	mu sync.Mutex
	e  *embed.Etcd // nil while stopped
}

// Start starts a server in a temporary directory of t and stops it when
// the test ends. It fails t if the server does not start.
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := StartServer(t.TempDir())
	if err != nil {
		t.Fatalf("etcdtest: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

// StartServer starts a server whose data lives in dir, on free loopback
// ports. The caller stops it with Stop.
func StartServer(dir string) (*Server, error) {
	cport, err := testserver.FreePort()
	if err != nil {
		return nil, err
	}
	pport, err := testserver.FreePort()
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, clientPort: cport, peerPort: pport}
	if err := s.start(); err != nil {
		return nil, err
	}
	return s, nil
}

// Addr returns the client address, host:port: give it to a client, or to
// faultlink.NewLink as the upstream.
func (s *Server) Addr() string { return fmt.Sprintf("127.0.0.1:%d", s.clientPort) }

// Dir returns the data directory.
func (s *Server) Dir() string { return s.dir }

// Stop stops the server and waits until it has stopped; its data stays in
// Dir. Client connections are cut; clients reconnect once it runs again.
// Calling Stop again does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.e == nil {
		return
	}
	s.e.Close() // waits for the server's goroutines, then closes Err()
	for range s.e.Err() {
	}
	s.e = nil
}

// Restart stops the server, if it runs, and starts it again on the same
// data directory and ports, as a real etcd restarts: keys, leases and
// revisions survive.
func (s *Server) Restart() error {
	s.Stop()
	return s.start()
}

// start starts the embedded server and waits until it serves.
func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.e != nil {
		return nil
	}
	e, err := embed.StartEtcd(s.config())
	if err != nil {
		return fmt.Errorf("etcdtest: start etcd in %s: %w", s.dir, err)
	}
	select {
	case <-e.Server.ReadyNotify():
		s.e = e
		return nil
	case err := <-e.Err():
		e.Close()
		return fmt.Errorf("etcdtest: etcd failed to start: %v", err)
	case <-time.After(readyTimeout):
		e.Close()
		return fmt.Errorf("etcdtest: etcd not ready after %v", readyTimeout)
	}
}

// config is the server's configuration: short ticks, so that the smallest
// lease is one second; no logs; no HTTP gateway.
func (s *Server) config() *embed.Config {
	cfg := embed.NewConfig()
	cfg.Name = "hustings-test"
	cfg.Dir = s.dir
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	curl := url.URL{Scheme: "http", Host: s.Addr()}
	purl := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", s.peerPort)}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{curl}, []url.URL{curl}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{purl}, []url.URL{purl}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	// The smallest lease etcd grants is 1.5 election timeouts rounded up
	// to seconds: 2s with the default 1000 ms; 1s with 500 ms.
	cfg.TickMs, cfg.ElectionMs = 50, 500
	cfg.EnableGRPCGateway = false
	return cfg
}

// Running reports whether the server runs.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.e != nil
}

// NewClient returns a client of the server at addr (host:port), which may
// be a faultlink's address. It reconnects at most a second after a lost
// connection, and logs nothing. The caller closes it.
func NewClient(addr string, opts ...grpc.DialOption) (*clientv3.Client, error) {
	params := grpc.ConnectParams{Backoff: backoff.DefaultConfig, MinConnectTimeout: 5 * time.Second}
	params.Backoff.MaxDelay = time.Second
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{addr},
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
		DialOptions: append([]grpc.DialOption{grpc.WithConnectParams(params)}, opts...),
	})
	if err != nil {
		return nil, fmt.Errorf("etcdtest: client of %s: %w", addr, err)
	}
	return cli, nil
}

// Client returns a client of the server at addr (host:port), closed when
// the test ends. It fails t on error.
func Client(t testing.TB, addr string, opts ...grpc.DialOption) *clientv3.Client {
	t.Helper()
	cli, err := NewClient(addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// Client returns a client connected straight to s, closed when the test
// ends.
func (s *Server) Client(t testing.TB, opts ...grpc.DialOption) *clientv3.Client {
	t.Helper()
	return Client(t, s.Addr(), opts...)
}

// Linked returns a faultlink to s and a client that goes through it; both
// end when the test does (the client first).
func (s *Server) Linked(t testing.TB, opts ...grpc.DialOption) (*faultlink.Link, *clientv3.Client) {
	t.Helper()
	link := faultlink.NewLink(t, s.Addr())
	return link, Client(t, link.Addr(), opts...)
}

// RemoveAll stops the server and deletes its data directory, for servers
// started with StartServer in a directory of their own.
func (s *Server) RemoveAll() error {
	s.Stop()
	return os.RemoveAll(s.dir)
}
