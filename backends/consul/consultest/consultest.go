// Package consultest runs a real Consul server for the tests and
// benchmarks of package consul: `consul agent -dev` (a single server, its
// state in memory) on free loopback ports, stopped by PID (never by
// name). For tests and benchmarks only.
//
// The binary is Consul at Version, the last MPL-licensed release line
// that needs no module the repository may not use (Consul 1.15 and 1.16
// require envoyextensions and troubleshoot), built from the Go module
// proxy by the repository's tools/consul module, once per machine: `make
// consul` (which `make test` runs first) or tools/consul/build.sh, minutes
// cold. Binary says where it is looked for. When it is missing, Start
// fails the test, saying how to build it: the tests are never skipped.
//
// Only the HTTP API listens (on Addr); DNS, gRPC and WAN gossip are off,
// and the LAN gossip and server RPC ports are free ones of their own, so
// that servers of several tests run side by side. Kill crashes the
// server; Restart brings it back on the same ports, empty (a dev agent
// keeps nothing): every session and key is gone, as after the loss of a
// whole cluster's state; a Durable server keeps its state on disk and
// comes back with it. Pause and Resume stop and continue the process
// (SIGSTOP, SIGCONT), as a server that hangs.
//
// Sessions may have TTLs from SessionTTLMin (the server's
// session_ttl_min, 10 s unless configured).
//
// Start is for tests (it stops the server when the test ends); StartServer
// and Stop are for code without a testing.TB, such as benchmarks in
// another module. Client and NewClient make a client of it with
// github.com/hashicorp/consul/api. A Server is safe for concurrent use.
package consultest

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/hustings/hustings/internal/testserver"
)

// SessionTTLMin is the shortest session TTL the server takes.
const SessionTTLMin = 100 * time.Millisecond

// Version is the Consul version the tests run; the tools module
// (tools/consul/go.mod) requires the same.
const Version = "v1.14.11"

// BinaryEnv names the environment variable that, when set, is the path of
// the consul binary, in place of the per-machine cache.
const BinaryEnv = "HUSTINGS_CONSUL"

// readyTimeout bounds how long a start waits for the server to elect
// itself and answer.
const readyTimeout = 60 * time.Second

// Server is one `consul agent -dev` process on 127.0.0.1.
type Server struct {
	dir     string
	bin     string
	durable bool
	http    int
	lan     int
	rpc     int

	mu      sync.Mutex
	proc    *testserver.Process // nil while killed or stopped
	stopped bool
}

// Binary returns the path of the consul binary: $HUSTINGS_CONSUL if set,
// otherwise <user cache dir>/hustings/consul-<Version>/consul, where <user
// cache dir> is os.UserCacheDir ($XDG_CACHE_HOME, or $HOME/.cache, on
// Linux), as tools/consul/build.sh writes it. It returns an error saying
// how to build the binary if there is none.
func Binary() (string, error) {
	path := os.Getenv(BinaryEnv)
	if path == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("consultest: %w", err)
		}
		path = filepath.Join(cache, "hustings", "consul-"+Version, "consul")
	}
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("consultest: consul %s is not built (%w); build it once per machine "+
			"with `make consul` from the repository root (tools/consul/build.sh, minutes)", Version, err)
	}
	return path, nil
}

// Start starts a server for t and stops it when the test ends. It fails
// the test if the server does not start, or if the binary is not built.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s, err := StartServer(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// StartServer starts a dev agent in a new temporary directory (its log
// and config) and waits until it has a leader and answers a KV read. The
// caller stops it with Stop.
func StartServer(opts ...Option) (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "consultest-")
	if err != nil {
		return nil, fmt.Errorf("consultest: %w", err)
	}
	s := &Server{dir: dir, bin: bin}
	for _, o := range opts {
		o(s)
	}
	for range 3 { // a free port may be taken before the server binds it
		if err = s.ports(); err != nil {
			break
		}
		if err = s.launch(); err == nil {
			return s, nil
		}
	}
	_ = os.RemoveAll(dir)
	return nil, err
}

// ports picks the three ports the agent listens on.
func (s *Server) ports() error {
	var err error
	for _, p := range []*int{&s.http, &s.lan, &s.rpc} {
		if *p, err = testserver.FreePort(); err != nil {
			return err
		}
	}
	return nil
}

// config is the agent's configuration beyond -dev: only what the tests
// use listens, on loopback; no update check calls home; sessions may live
// as short as 100 ms (SessionTTLMin; Consul's default minimum is 10 s).
const config = `
disable_update_check = true
session_ttl_min = "100ms"
ports {
  dns      = -1
  grpc     = -1
  grpc_tls = -1
  https    = -1
  serf_wan = -1
}
connect { enabled = false }
peering { enabled = false }
`

// Option configures a Server.
type Option func(*Server)

// Durable runs a server that keeps its state on disk (`consul agent
// -server -bootstrap-expect=1`, raft in its directory, each write
// fsynced) instead of a dev agent: Restart then brings back every key,
// session and index, as a production server's restart does. It starts
// slower (it elects itself after a few seconds).
func Durable() Option { return func(s *Server) { s.durable = true } }

// durableConfig is what a durable server adds to config: the fastest raft
// timings, as -dev has them.
const durableConfig = `
performance { raft_multiplier = 1 }
ui_config { enabled = false }
`

// launch runs the agent on s's ports and waits until it answers; the
// caller holds s.mu, or s is not yet shared.
func (s *Server) launch() error {
	node := "consultest-" + strconv.Itoa(s.http)
	args := []string{"agent", "-dev"}
	if s.durable {
		args = []string{"agent", "-server", "-bootstrap-expect=1", "-data-dir=" + filepath.Join(s.dir, "data"), "-hcl=" + durableConfig}
	}
	args = append(args,
		"-bind=127.0.0.1", "-client=127.0.0.1",
		"-http-port="+strconv.Itoa(s.http),
		"-serf-lan-port="+strconv.Itoa(s.lan),
		"-server-port="+strconv.Itoa(s.rpc),
		"-node="+node,
		"-log-level=warn",
		"-hcl="+config,
	)
	p, err := testserver.Start(s.dir, s.bin, args...)
	if err != nil {
		return fmt.Errorf("consultest: %w", err)
	}
	c, err := NewClient(s.Addr())
	if err != nil {
		p.Kill()
		return err
	}
	if err := p.WaitFor(readyTimeout, func() error {
		leader, err := c.Status().Leader()
		if err != nil {
			return err
		}
		if leader == "" {
			return fmt.Errorf("no leader yet")
		}
		if _, _, err = c.KV().Get("consultest/ready", &api.QueryOptions{RequireConsistent: true}); err != nil {
			return err
		}
		// A session names the agent's node, which the agent registers
		// in the catalog a moment after the leader is elected: until
		// then a session create fails with "Missing node registration"
		// (seen on a busy machine).
		n, _, err := c.Catalog().Node(node, &api.QueryOptions{RequireConsistent: true})
		if err == nil && n == nil {
			err = fmt.Errorf("node %s not registered yet", node)
		}
		return err
	}); err != nil {
		p.Kill()
		return fmt.Errorf("consultest: %w", err)
	}
	s.proc = p
	return nil
}

// Addr returns the server's HTTP API address, 127.0.0.1:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.http)) }

// URL returns the server's HTTP API URL, http://127.0.0.1:port.
func (s *Server) URL() string { return "http://" + s.Addr() }

// Client returns a new client of the server, as NewClient makes it.
func (s *Server) Client() (*api.Client, error) { return NewClient(s.Addr()) }

// NewClient returns a client of the server (or a link to one) at addr,
// host:port of its HTTP API, over plain HTTP, keeping up to 128 idle
// connections (the Go client keeps GOMAXPROCS+1 by default: a backend
// with 64 calls in flight would open and close connections by the
// thousand, and meet the server's limit of 200 per client address).
// What it does not set is api.DefaultConfig's (a CONSUL_HTTP_TOKEN in
// the environment, say).
func NewClient(addr string) (*api.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 128
	cfg := &api.Config{Address: addr, Scheme: "http", Transport: tr}
	c, err := api.NewClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("consultest: client of %s: %w", addr, err)
	}
	return c, nil
}

// PID returns the server's process ID, or 0 while it is killed or stopped.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return 0
	}
	return s.proc.PID()
}

// Log returns the tail of the server's output, for failure messages.
func (s *Server) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return ""
	}
	return s.proc.Log()
}

// Kill ends the server with SIGKILL (by PID), as a crash: clients get
// errors until Restart. Killing a killed server does nothing.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kill()
}

// kill kills the server if it runs; the caller holds s.mu.
func (s *Server) kill() {
	if s.proc != nil {
		s.proc.Kill()
		s.proc = nil
	}
}

// Restart kills the server if it runs, and starts it again on the same
// ports: empty for a dev agent, which keeps no state; with every key,
// session and index for a Durable one. It returns once the new
// server has a leader and answers.
func (s *Server) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return fmt.Errorf("consultest: server on %s is stopped", s.Addr())
	}
	s.kill()
	return s.launch()
}

// Stop kills the server (SIGKILL, by PID) and removes its directory.
// Calling it again does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	s.stopped = true
	s.kill()
	_ = os.RemoveAll(s.dir)
}

// Pause stops the server (SIGSTOP): it holds its connections and answers
// nothing until Resume. Pausing a killed server does nothing.
func (s *Server) Pause() error { return s.signal(syscall.SIGSTOP) }

// Resume continues a paused server (SIGCONT).
func (s *Server) Resume() error { return s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return nil
	}
	if err := s.proc.Signal(sig); err != nil {
		return fmt.Errorf("consultest: %w", err)
	}
	return nil
}
