// Package natstest runs a real nats-server with JetStream for the tests
// and benchmarks of package nats: a process on a free loopback port, its
// store in a temporary directory that Stop removes, stopped by PID. For
// tests and benchmarks only.
//
// The binary is nats-server at Version, built from the Go module proxy by
// the repository's tools/nats-server module, once per machine: `make
// nats-server` (which `make test` runs first) or tools/nats-server/build.sh,
// under a minute. Binary says where it is looked for. When it is missing,
// Start fails the test, saying how to build it: the tests are never
// skipped. The server is a process of its own, not embedded, so that Kill
// crashes it and Restart brings it back on the same port and store, as
// the fault and chaos tests need; and so that the library's go.mod never
// requires nats-server.
//
// Start is for tests (it stops the server when the test ends); StartServer
// and Stop are for code without a testing.TB, such as benchmarks in
// another module; Main is the TestMain of a package whose tests share one
// server. Conn and Connect dial it. A Server is safe for concurrent use.
package natstest

import (
	"context"
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hustings/hustings/internal/testserver"
)

// Version is the nats-server version the tests run; the tools module
// (tools/nats-server/go.mod) requires the same.
const Version = "v2.15.3"

// BinaryEnv names the environment variable that, when set, is the path of
// the nats-server binary, in place of the per-machine cache.
const BinaryEnv = "HUSTINGS_NATS_SERVER"

// readyTimeout bounds how long a start waits for JetStream to answer.
const readyTimeout = 30 * time.Second

// Server is one nats-server process with JetStream, restartable on the
// same port and store.
type Server struct {
	port  int
	extra []string // more arguments: a cluster node's
	srv   *testserver.Server
}

// Binary returns the path of the nats-server binary: $HUSTINGS_NATS_SERVER
// if set, otherwise <user cache dir>/hustings/nats-server-<Version>/nats-server,
// where <user cache dir> is os.UserCacheDir ($XDG_CACHE_HOME, or
// $HOME/.cache, on Linux), as tools/nats-server/build.sh writes it. It
// returns an error saying how to build the binary if there is none.
func Binary() (string, error) {
	return testserver.Built("natstest", BinaryEnv, "nats-server", Version,
		"`make nats-server` from the repository root (tools/nats-server/build.sh, under a minute)")
}

// Start starts a server for t and stops it when the test ends. It fails
// the test if the server does not start, or if the binary is not built.
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := StartServer()
	return testserver.Must(t, s, err)
}

// StartServer starts a server with JetStream in a new temporary directory
// and waits until JetStream answers. The caller stops it with Stop.
func StartServer() (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	s := &Server{}
	if s.srv, err = testserver.Run(s.spec(bin), &s.port); err != nil {
		return nil, err
	}
	return s, nil
}

// spec is how s runs bin.
func (s *Server) spec(bin string) testserver.Spec {
	return testserver.Spec{Kit: "natstest", Bin: bin, Args: s.args, Ready: s.ready,
		ReadyTimeout: readyTimeout, Addr: s.Addr}
}

// args are the server's arguments, for s's port and the store in dir.
func (s *Server) args(dir string) []string {
	args := []string{"-a", "127.0.0.1", "-p", strconv.Itoa(s.port),
		"-js", "-sd", filepath.Join(dir, "store"),
		"--server_name", "natstest-" + strconv.Itoa(s.port)}
	return append(args, s.extra...)
}

// ready returns nil once JetStream answers an account info request.
func (s *Server) ready() error {
	nc, err := nats.Connect(s.URL(), nats.Timeout(time.Second), nats.NoReconnect())
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err = js.AccountInfo(ctx)
	return err
}

// Addr returns the server's client address, 127.0.0.1:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// URL returns the server's client URL, nats://127.0.0.1:port.
func (s *Server) URL() string { return URL(s.Addr()) }

// URL returns the client URL of a server (or a link to one) at addr.
func URL(addr string) string { return "nats://" + addr }

// PID returns the server's process ID, or 0 while it is killed or stopped.
func (s *Server) PID() int { return s.srv.PID() }

// Log returns the tail of the server's output, for failure messages.
func (s *Server) Log() string { return s.srv.Log() }

// Kill ends the server with SIGKILL (by PID), as a crash: clients get
// errors until Restart; the store stays. Killing a killed server does
// nothing.
func (s *Server) Kill() { s.srv.Kill() }

// Pause stops the server with SIGSTOP and returns once the kernel has
// stopped it: connections stay open and nothing answers, as a server
// stalled by the machine. Resume undoes it.
func (s *Server) Pause() error { return s.srv.Pause() }

// Resume continues a paused server (SIGCONT).
func (s *Server) Resume() error { return s.srv.Resume() }

// Restart kills the server if it runs, and starts it again on the same
// port and store: buckets, keys and stream sequences survive. It returns
// once JetStream answers.
func (s *Server) Restart() error { return s.srv.Restart() }

// Stop kills the server (SIGKILL, by PID) and removes its directory.
// Calling it again does nothing.
func (s *Server) Stop() { s.srv.Stop() }
