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
// whole cluster's state.
//
// Start is for tests (it stops the server when the test ends); StartServer
// and Stop are for code without a testing.TB, such as benchmarks in
// another module. Client and NewClient make a client of it with
// github.com/hashicorp/consul/api. A Server is safe for concurrent use.
package consultest

import (
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/hustings/hustings/internal/testserver"
)

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
	http int
	lan  int
	rpc  int
	srv  *testserver.Server
}

// Binary returns the path of the consul binary: $HUSTINGS_CONSUL if set,
// otherwise <user cache dir>/hustings/consul-<Version>/consul, where <user
// cache dir> is os.UserCacheDir ($XDG_CACHE_HOME, or $HOME/.cache, on
// Linux), as tools/consul/build.sh writes it. It returns an error saying
// how to build the binary if there is none.
func Binary() (string, error) {
	return testserver.Built("consultest", BinaryEnv, "consul", Version,
		"`make consul` from the repository root (tools/consul/build.sh, minutes)")
}

// Start starts a server for t and stops it when the test ends. It fails
// the test if the server does not start, or if the binary is not built.
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := StartServer()
	return testserver.Must(t, s, err)
}

// StartServer starts a dev agent in a new temporary directory (its log
// and config) and waits until it has a leader and answers a KV read. The
// caller stops it with Stop.
func StartServer() (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	s := &Server{}
	s.srv, err = testserver.Run(testserver.Spec{Kit: "consultest", Bin: bin,
		Args: s.args, Ready: s.ready, ReadyTimeout: readyTimeout, Addr: s.Addr}, &s.http, &s.lan, &s.rpc)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// config is the agent's configuration beyond -dev: only what the tests
// use listens, on loopback; no update check calls home.
const config = `
disable_update_check = true
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

// args are the agent's arguments, for s's ports.
func (s *Server) args(string) []string {
	return []string{"agent", "-dev",
		"-bind=127.0.0.1", "-client=127.0.0.1",
		"-http-port=" + strconv.Itoa(s.http),
		"-serf-lan-port=" + strconv.Itoa(s.lan),
		"-server-port=" + strconv.Itoa(s.rpc),
		"-node=consultest-" + strconv.Itoa(s.http),
		"-log-level=warn",
		"-hcl=" + config,
	}
}

// ready returns nil once the agent has a leader and answers a consistent
// KV read.
func (s *Server) ready() error {
	c, err := s.Client()
	if err != nil {
		return err
	}
	leader, err := c.Status().Leader()
	if err != nil {
		return err
	}
	if leader == "" {
		return fmt.Errorf("no leader yet")
	}
	_, _, err = c.KV().Get("consultest/ready", &api.QueryOptions{RequireConsistent: true})
	return err
}

// Addr returns the server's HTTP API address, 127.0.0.1:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.http)) }

// URL returns the server's HTTP API URL, http://127.0.0.1:port.
func (s *Server) URL() string { return "http://" + s.Addr() }

// Client returns a new client of the server, as NewClient makes it.
func (s *Server) Client() (*api.Client, error) { return NewClient(s.Addr()) }

// NewClient returns a client of the server (or a link to one) at addr,
// host:port of its HTTP API, over plain HTTP. What it does not set is
// api.DefaultConfig's (a CONSUL_HTTP_TOKEN in the environment, say).
func NewClient(addr string) (*api.Client, error) {
	cfg := &api.Config{Address: addr, Scheme: "http"}
	c, err := api.NewClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("consultest: client of %s: %w", addr, err)
	}
	return c, nil
}

// PID returns the server's process ID, or 0 while it is killed or stopped.
func (s *Server) PID() int { return s.srv.PID() }

// Log returns the tail of the server's output, for failure messages.
func (s *Server) Log() string { return s.srv.Log() }

// Kill ends the server with SIGKILL (by PID), as a crash: clients get
// errors until Restart. Killing a killed server does nothing.
func (s *Server) Kill() { s.srv.Kill() }

// Restart kills the server if it runs, and starts it again on the same
// ports, empty: a dev agent keeps no state. It returns once the new
// server has a leader and answers.
func (s *Server) Restart() error { return s.srv.Restart() }

// Stop kills the server (SIGKILL, by PID) and removes its directory.
// Calling it again does nothing.
func (s *Server) Stop() { s.srv.Stop() }
