// Package pgtest runs PostgreSQL servers for the tests and benchmarks of
// package postgres: each a cluster of its own, made by initdb in a fresh
// temporary directory, served by postgres on a free loopback port, and
// stopped by PID (never by name). It never touches a system cluster.
//
// The server programs are looked up in /usr/lib/postgresql/<version>/bin
// (Debian's postgresql package), then in $PATH. PostgreSQL refuses to run
// as root: when the caller is root (as CI is), initdb and postgres are run
// as the unprivileged user "postgres" (which Debian's package creates),
// or "nobody" if there is none, through the credential of the child
// process (syscall.Credential, what setpriv does); the cluster's directory
// is made theirs. Other callers run them as themselves.
//
// A cluster runs with fsync=off unless it is Durable. The faults the
// tests inject are crashes of the server's processes (SIGKILL, an
// immediate shutdown), not of the machine: what PostgreSQL wrote is in
// the kernel's page cache and survives them, so nothing acknowledged is
// lost, as with fsync on. What
// fsync=off takes away is this machine's disk: on its virtual disk a
// commit's WAL flush sometimes took over a second beside two CPU burners,
// and since a NOTIFY holds PostgreSQL's one notify lock through its
// commit, every notifying transaction, and every one waiting on a row they
// locked, queued behind it (seen with log_lock_waits: waits of 1–1.6 s on
// "object 0 of class 1262" and on transactions); crash recovery's sync of
// the data directory took 53 s once. Those are the disk's latencies, not
// the backend's, and the tests measure the backend. Benchmarks, which
// compare commits with a production server's, use Durable.
//
// A Server is safe for concurrent use. Start stops its server when the
// test ends; a Server from StartServer must be stopped with Stop, which
// also removes its directory.
package pgtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hustings/hustings/internal/testserver"
)

// User is the database superuser of every cluster; it logs in without a
// password (trust), from the loopback interface only.
const User = "hustings"

// readyTimeout bounds how long a starting server may take to accept a
// connection (crash recovery after an immediate shutdown included).
const readyTimeout = 30 * time.Second

// Server is one postgres process on 127.0.0.1 serving its own cluster,
// restartable on the same port with the same data.
type Server struct {
	dir  string // owned by cred's user: data/, the socket, logs
	port int
	bin  string
	cred *syscall.Credential // nil: run as the caller
	sync bool                // fsync on (Durable)
	srv  *testserver.Server
}

// Option configures a server.
type Option func(*Server)

// Durable runs the server with fsync on, as in production: every commit
// waits for its WAL to reach the disk.
func Durable() Option { return func(s *Server) { s.sync = true } }

// Start starts a server for t and stops it when the test ends. It fails
// the test if the server does not start.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s, err := StartServer(opts...)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

// StartServer makes a cluster in a new temporary directory, starts a
// server on it and waits until it accepts connections. The caller stops
// it with Stop.
func StartServer(opts ...Option) (*Server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	cred, err := credential()
	if err != nil {
		return nil, err
	}
	dir, err := testserver.TempDir("pgtest")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, bin: bin, cred: cred}
	for _, o := range opts {
		o(s)
	}
	if err := s.initdb(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	s.srv, err = testserver.Run(testserver.Spec{
		Kit: "pgtest", Dir: dir, RemoveDir: true, Bin: filepath.Join(bin, "postgres"), Cred: cred,
		Args: s.args, Ready: s.ping, ReadyTimeout: readyTimeout, Addr: s.Addr,
		// An immediate shutdown: no checkpoint, crash recovery at the next
		// start. The old server's backends notice their postmaster's death
		// on their own, up to seconds later under load, and hold its
		// shared memory until then: a start before fails at once
		// ("pre-existing shared memory block is still in use"), and is
		// tried again.
		Shutdown: syscall.SIGQUIT, RestartWithin: time.Minute,
	}, &s.port)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// binDir finds the directory of initdb and postgres: the newest of
// Debian's /usr/lib/postgresql/*/bin, or the one in $PATH.
func binDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
			return d, nil
		}
	}
	p, err := exec.LookPath("postgres")
	if err != nil {
		return "", fmt.Errorf("pgtest: postgres not found; on Debian: apt-get install postgresql: %w", err)
	}
	return filepath.Dir(p), nil
}

// version returns the major version in a path like /usr/lib/postgresql/15/bin.
func version(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

// credential returns the unprivileged user to run the server as when the
// caller is root, nil otherwise.
func credential() (*syscall.Credential, error) {
	cred, err := testserver.Unprivileged("postgres", "nobody")
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	return cred, nil
}

// initdb makes the cluster in s.dir/data, owned by the server's user.
func (s *Server) initdb() error {
	if s.cred != nil {
		if err := os.Chown(s.dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			return fmt.Errorf("pgtest: %w", err)
		}
	}
	cmd := exec.Command(filepath.Join(s.bin, "initdb"), "-D", filepath.Join(s.dir, "data"),
		"-U", User, "-A", "trust", "-E", "UTF8", "--locale=C", "--no-instructions", "--no-sync")
	cmd.Dir = s.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pgtest: initdb: %w\n%s", err, out)
	}
	return nil
}

// args are postgres's arguments, for s.port.
func (s *Server) args(dir string) []string {
	fsync := "off" // see the package doc
	if s.sync {
		fsync = "on"
	}
	return []string{
		"-D", filepath.Join(dir, "data"),
		"-p", strconv.Itoa(s.port),
		"-k", dir, // the Unix socket: not the system's /var/run/postgresql
		"-c", "listen_addresses=127.0.0.1",
		"-c", "max_connections=300",
		"-c", "log_min_messages=warning",
		"-c", "fsync=" + fsync,
	}
}

// ping opens one connection and runs SELECT 1.
func (s *Server) ping() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.DSN())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, "SELECT 1")
	return err
}

// Addr returns the server's host:port.
func (s *Server) Addr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
}

// DSN returns a connection string for the database postgres as User.
func (s *Server) DSN() string { return DSN(s.Addr()) }

// DSN returns a connection string for the database postgres on addr
// (host:port, a test server or a fault link to one) as User.
func DSN(addr string) string {
	return "postgres://" + User + "@" + addr + "/postgres?sslmode=disable"
}

// Kill ends the server with SIGKILL to its process group, like a crash
// of the machine: clients get errors until Restart. Killing a killed
// server does nothing.
func (s *Server) Kill() { s.srv.Kill() }

// Restart stops the server with an immediate shutdown (SIGQUIT: no
// checkpoint, crash recovery at the next start) if it runs, and starts it
// again on the same port with the same data. It returns once the new
// server accepts connections.
func (s *Server) Restart() error { return s.srv.Restart() }

// Stop stops the server for good (an immediate shutdown) and removes its
// directory. Calling it again does nothing.
func (s *Server) Stop() { s.srv.Stop() }

// Log returns the tail of the server's output, for failure messages.
func (s *Server) Log() string { return s.srv.Log() }

// Pool returns a pool of connections to dsn, closed when the test ends.
func Pool(t testing.TB, dsn string) *pgxpool.Pool {
	t.Helper()
	p, err := NewPool(dsn)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(p.Close)
	return p
}

// NewPool returns a pool of connections to dsn; it does not dial yet. The
// caller closes it.
func NewPool(dsn string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = 16
	return pgxpool.NewWithConfig(context.Background(), cfg)
}
