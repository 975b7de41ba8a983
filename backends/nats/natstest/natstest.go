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
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
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
	dir   string
	bin   string
	port  int
	extra []string // more arguments: a cluster node's

	mu      sync.Mutex
	proc    *testserver.Process // nil while killed or stopped
	stopped bool
}

// Binary returns the path of the nats-server binary: $HUSTINGS_NATS_SERVER
// if set, otherwise <user cache dir>/hustings/nats-server-<Version>/nats-server,
// where <user cache dir> is os.UserCacheDir ($XDG_CACHE_HOME, or
// $HOME/.cache, on Linux), as tools/nats-server/build.sh writes it. It
// returns an error saying how to build the binary if there is none.
func Binary() (string, error) {
	path := os.Getenv(BinaryEnv)
	if path == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("natstest: %w", err)
		}
		path = filepath.Join(cache, "hustings", "nats-server-"+Version, "nats-server")
	}
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("natstest: nats-server %s is not built (%w); build it once per machine "+
			"with `make nats-server` from the repository root (tools/nats-server/build.sh, under a minute)", Version, err)
	}
	return path, nil
}

// Start starts a server for t and stops it when the test ends. It fails
// the test if the server does not start, or if the binary is not built.
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := StartServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// StartServer starts a server with JetStream in a new temporary directory
// and waits until JetStream answers. The caller stops it with Stop.
func StartServer() (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "natstest-")
	if err != nil {
		return nil, fmt.Errorf("natstest: %w", err)
	}
	s := &Server{dir: dir, bin: bin}
	for range 3 { // the free port may be taken before the server binds it
		if s.port, err = testserver.FreePort(); err != nil {
			break
		}
		if err = s.launch(); err == nil {
			return s, nil
		}
	}
	_ = os.RemoveAll(dir)
	return nil, err
}

// launch runs the server on s's port and store and waits until JetStream
// answers; the caller holds s.mu, or s is not yet shared.
func (s *Server) launch() error {
	p, err := s.spawn()
	if err != nil {
		return err
	}
	return s.await(p)
}

// spawn starts the server process on s's port and store.
func (s *Server) spawn() (*testserver.Process, error) {
	args := []string{"-a", "127.0.0.1", "-p", strconv.Itoa(s.port),
		"-js", "-sd", filepath.Join(s.dir, "store"),
		"--server_name", "natstest-" + strconv.Itoa(s.port)}
	return testserver.Start(s.dir, s.bin, append(args, s.extra...)...)
}

// await waits until p's JetStream answers, and makes it s's process; it
// kills p if it does not.
func (s *Server) await(p *testserver.Process) error {
	if err := p.WaitFor(readyTimeout, s.ready); err != nil {
		p.Kill()
		return fmt.Errorf("natstest: %w", err)
	}
	s.proc = p
	return nil
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
// errors until Restart; the store stays. Killing a killed server does
// nothing.
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

// Pause stops the server with SIGSTOP and returns once the kernel has
// stopped it: connections stay open and nothing answers, as a server
// stalled by the machine. Resume undoes it.
func (s *Server) Pause() error {
	if err := s.signal(syscall.SIGSTOP); err != nil {
		return err
	}
	stat := "/proc/" + strconv.Itoa(s.PID()) + "/stat"
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		b, err := os.ReadFile(stat)
		if err != nil {
			return fmt.Errorf("natstest: %w", err)
		}
		// pid (comm) state ...: the state follows the last ')'.
		if i := bytes.LastIndexByte(b, ')'); i > 0 && i+2 < len(b) && b[i+2] == 'T' {
			return nil
		}
	}
	return fmt.Errorf("natstest: server on %s not stopped 5s after SIGSTOP", s.Addr())
}

// Resume continues a paused server (SIGCONT).
func (s *Server) Resume() error { return s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return fmt.Errorf("natstest: server on %s is not running", s.Addr())
	}
	return s.proc.Signal(sig)
}

// Restart kills the server if it runs, and starts it again on the same
// port and store: buckets, keys and stream sequences survive. It returns
// once JetStream answers.
func (s *Server) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return fmt.Errorf("natstest: server on %s is stopped", s.Addr())
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
