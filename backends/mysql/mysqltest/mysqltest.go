// Package mysqltest runs MariaDB servers for the tests and benchmarks of
// package mysql: each a data directory of its own, made by
// mariadb-install-db in a fresh temporary directory, served by mariadbd on
// a free loopback port, and stopped by PID (never by name). It never
// touches a system server. Debian's mariadb-server package provides both
// programs.
//
// When the caller is root (as CI is), both run as the unprivileged user
// "mysql" (which Debian's package creates), or "nobody" if there is none,
// through the credential of the child process; the directory is made
// theirs. The server runs with --skip-grant-tables: any user logs in with
// any password, from the loopback interface only.
//
// A Server is safe for concurrent use. Start stops its server when the
// test ends; a Server from StartServer must be stopped with Stop, which
// also removes its directory. Nothing here needs package testing but
// Start.
package mysqltest

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/hustings/hustings/internal/testserver"
)

// Database is the database every server has, for the tests' tables.
const Database = "hustings"

// readyTimeout bounds how long a starting server may take to accept a
// connection (crash recovery included).
const readyTimeout = 60 * time.Second

// Server is one mariadbd process on 127.0.0.1 serving its own data
// directory, restartable on the same port with the same data.
type Server struct {
	dir  string // owned by cred's user: data/, the socket, logs
	port int
	cred *syscall.Credential // nil: run as the caller
	sync bool                // each commit flushed to disk (Durable)
	srv  *testserver.Server
}

// Option configures a server.
type Option func(*Server)

// Durable flushes InnoDB's log to the disk at every commit
// (innodb_flush_log_at_trx_commit=1), as in production. By default the
// log is written at commit and flushed once a second (=2): a crash of the
// server, the tests' fault, loses nothing; one of the machine could.
func Durable() Option { return func(s *Server) { s.sync = true } }

// Start starts a server for t and stops it when the test ends. It fails
// the test if the server does not start.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s, err := StartServer(opts...)
	if err != nil {
		t.Fatalf("mysqltest: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

// StartServer makes a data directory in a new temporary directory,
// starts a server on it, waits until it accepts connections and creates
// Database. The caller stops it with Stop.
func StartServer(opts ...Option) (*Server, error) {
	cred, err := credential()
	if err != nil {
		return nil, err
	}
	bin, err := exec.LookPath("mariadbd")
	if err != nil {
		return nil, fmt.Errorf("mysqltest: mariadbd not found; on Debian: apt-get install mariadb-server: %w", err)
	}
	dir, err := testserver.TempDir("mysqltest")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, cred: cred}
	for _, o := range opts {
		o(s)
	}
	if err := s.install(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	s.srv, err = testserver.Run(testserver.Spec{
		Kit: "mysqltest", Dir: dir, RemoveDir: true, Bin: bin, Cred: cred, Args: s.args,
		Ready: func() error { return s.exec("SELECT 1") }, ReadyTimeout: readyTimeout, Addr: s.Addr,
	}, &s.port)
	if err != nil {
		return nil, err
	}
	if err := s.exec("CREATE DATABASE IF NOT EXISTS " + Database); err != nil {
		s.Stop()
		return nil, fmt.Errorf("mysqltest: %w", err)
	}
	return s, nil
}

// credential returns the unprivileged user to run the server as when the
// caller is root, nil otherwise.
func credential() (*syscall.Credential, error) {
	cred, err := testserver.Unprivileged("mysql", "nobody")
	if err != nil {
		return nil, fmt.Errorf("mysqltest: %w", err)
	}
	return cred, nil
}

// install makes the data directory in s.dir/data, owned by the server's
// user.
func (s *Server) install() error {
	bin, err := exec.LookPath("mariadb-install-db")
	if err != nil {
		return fmt.Errorf("mysqltest: mariadb-install-db not found; on Debian: apt-get install mariadb-server: %w", err)
	}
	// A temporary directory of the server's own: in the shared /tmp, an
	// install beside other tests failed deleting its own temporary table
	// ("Error on delete of '/tmp/#sql-temptable-…'"), under make test-busy.
	tmp := filepath.Join(s.dir, "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return fmt.Errorf("mysqltest: %w", err)
	}
	if s.cred != nil {
		for _, d := range []string{s.dir, tmp} {
			if err := os.Chown(d, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
				return fmt.Errorf("mysqltest: %w", err)
			}
		}
	}
	cmd := exec.Command(bin, "--no-defaults", "--datadir="+filepath.Join(s.dir, "data"), "--tmpdir="+tmp,
		"--skip-test-db", "--auth-root-authentication-method=normal", "--skip-name-resolve")
	cmd.Dir = s.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("mysqltest: mariadb-install-db: %w\n%s", err, out)
	}
	return nil
}

// args are mariadbd's arguments, for s.port and the data in dir.
func (s *Server) args(dir string) []string {
	flush := "2" // see Durable
	if s.sync {
		flush = "1"
	}
	return []string{"--no-defaults",
		"--datadir=" + filepath.Join(dir, "data"),
		"--tmpdir=" + filepath.Join(dir, "tmp"),
		"--port=" + strconv.Itoa(s.port),
		"--bind-address=127.0.0.1",
		"--socket=" + filepath.Join(dir, "mysqld.sock"),
		"--pid-file=" + filepath.Join(dir, "mysqld.pid"),
		"--skip-grant-tables", "--skip-name-resolve", "--skip-log-bin",
		"--innodb-buffer-pool-size=32M", "--innodb-log-file-size=16M",
		"--innodb-flush-log-at-trx-commit=" + flush, "--max-connections=300",
	}
}

// exec runs one statement on a connection of its own.
func (s *Server) exec(stmt string) error {
	db, err := sql.Open("mysql", DSN(s.Addr(), ""))
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err = db.ExecContext(ctx, stmt)
	return err
}

// Addr returns the server's host:port.
func (s *Server) Addr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
}

// DSN returns a go-sql-driver/mysql DSN for Database on the server.
func (s *Server) DSN() string { return DSN(s.Addr(), Database) }

// DSN returns a go-sql-driver/mysql DSN for database db (may be empty) on
// addr (host:port, a test server or a fault link to one), as root.
func DSN(addr, db string) string {
	c := mysql.NewConfig()
	c.User = "root"
	c.Net = "tcp"
	c.Addr = addr
	c.DBName = db
	c.ParseTime = true
	c.Timeout = 5 * time.Second
	return c.FormatDSN()
}

// DB returns a pool of connections to dsn, closed when the test ends.
func DB(t testing.TB, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatalf("mysqltest: %v", err)
	}
	db.SetMaxOpenConns(32)
	db.SetMaxIdleConns(32)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// Kill ends the server with SIGKILL, like a crash of the machine: clients
// get errors until Restart. Killing a killed server does nothing.
func (s *Server) Kill() { s.srv.Kill() }

// Restart kills the server if it runs and starts it again on the same
// port with the same data (crash recovery). It returns once the new
// server accepts connections.
func (s *Server) Restart() error { return s.srv.Restart() }

// Stop stops the server for good and removes its directory. Calling it
// again does nothing.
func (s *Server) Stop() { s.srv.Stop() }
