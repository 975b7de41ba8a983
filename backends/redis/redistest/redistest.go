// Package redistest runs redis-server processes for the tests and
// benchmarks of package redis: each on a free loopback port, stopped by
// PID. By default without persistence: Kill and Restart stand for a crash
// and for a failover to an empty replica, and a restarted server has lost
// every key. With Durable, every write is fsynced to an append-only file
// before it is answered, and a restart keeps every key. With Cluster, the
// server is a Redis Cluster of one node; with Config, any directive.
//
// A Server is safe for concurrent use. Start stops its server when the test
// ends; a Server from StartServer must be stopped with Stop.
package redistest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/hustings/hustings/internal/testserver"
)

// Binary is the server program started, looked up in $PATH.
const Binary = "redis-server"

// readyTimeout bounds how long a starting server may take to answer PING.
const readyTimeout = 15 * time.Second

// Server is one redis-server process on 127.0.0.1, restartable on the same
// port.
type Server struct {
	port    int
	durable bool
	cluster bool
	config  []string // more arguments, from Config
	srv     *testserver.Server
}

// Start starts a server for t in a temporary directory and stops it when
// the test ends. It fails the test if the server does not start.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s, err := StartServer(t.TempDir(), opts...)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

// Option configures a server.
type Option func(*Server)

// Durable makes the server write every change to an append-only file and
// fsync it before answering (appendfsync always), so that Kill and Restart
// lose nothing that was acknowledged.
func Durable() Option { return func(s *Server) { s.durable = true } }

// Cluster makes the server a Redis Cluster of one node that serves every
// slot: commands and scripts over keys of several slots fail with
// CROSSSLOT as on any Cluster. Connect with ClusterClient. It needs
// redis-server 7.0 or later (CLUSTER ADDSLOTSRANGE).
func Cluster() Option { return func(s *Server) { s.cluster = true } }

// Config sets a configuration directive of the server, such as
// Config("maxmemory", "4mb"), for every start of it; it comes after
// those redistest sets, so it may override them.
func Config(directive, value string) Option {
	return func(s *Server) { s.config = append(s.config, "--"+directive, value) }
}

// StartServer starts a server whose working directory and log
// (redis-server.log) are in dir, and waits until it answers PING. The
// caller stops it with Stop.
func StartServer(dir string, opts ...Option) (*Server, error) {
	if _, err := exec.LookPath(Binary); err != nil {
		return nil, fmt.Errorf("redistest: %s not found; on Debian: apt-get install redis-server: %w", Binary, err)
	}
	s := &Server{}
	for _, o := range opts {
		o(s)
	}
	ready := s.ping
	if s.cluster {
		ready = s.clusterReady
	}
	var err error
	s.srv, err = testserver.Run(testserver.Spec{Kit: "redistest", Dir: dir, Bin: Binary,
		Args: s.args, Ready: ready, ReadyTimeout: readyTimeout, Addr: s.Addr}, &s.port)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Addr returns the server's host:port.
func (s *Server) Addr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
}

// Kill ends the server process with SIGKILL, like a crash: clients get
// errors until Restart. Killing a killed server does nothing.
func (s *Server) Kill() { s.srv.Kill() }

// Restart kills the server if it runs and starts a new one on the same
// port: every key is lost, as after a failover to an empty replica, unless
// the server is Durable.
// It returns once the new server answers PING.
func (s *Server) Restart() error { return s.srv.Restart() }

// Stop kills the server for good. Calling it again does nothing.
func (s *Server) Stop() { s.srv.Stop() }

// Log returns the tail of the server's output, for failure messages.
func (s *Server) Log() string { return s.srv.Log() }

// args are redis-server's arguments, for s.port.
func (s *Server) args(string) []string {
	persist := []string{"--appendonly", "no"}
	if s.durable {
		persist = []string{"--appendonly", "yes", "--appendfsync", "always"}
	}
	args := append([]string{"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--save", "", "--daemonize", "no"}, persist...)
	if s.cluster {
		// The node config (its ID, its slots) outlives a restart, as on a
		// real node; the data does not.
		args = append(args, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-announce-ip", "127.0.0.1")
	}
	return append(args, s.config...)
}

// clusterReady gives the node every slot, if it has none yet, and
// returns nil once it reports the cluster state ok.
func (s *Server) clusterReady() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	reply, err := s.send(ctx, "CLUSTER ADDSLOTSRANGE 0 16383")
	if err != nil {
		return err
	}
	if reply != "+OK" && !strings.Contains(reply, "already busy") {
		return fmt.Errorf("CLUSTER ADDSLOTSRANGE answered %q", reply)
	}
	text, err := s.bulk(ctx, "CLUSTER INFO")
	if err != nil {
		return err
	}
	if !strings.Contains(text, "cluster_state:ok") {
		return errors.New("cluster state not ok yet")
	}
	return nil
}

// ping sends one PING on a fresh connection, so that it starts no client
// goroutine.
func (s *Server) ping() error {
	c, err := net.DialTimeout("tcp", s.Addr(), time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}

// Options returns the client options the tests use for addr: the
// defaults, but with ContextTimeoutEnabled, so that a call's context
// deadline bounds its reads and writes.
func Options(addr string) *goredis.Options {
	return &goredis.Options{Addr: addr, ContextTimeoutEnabled: true}
}

// Client returns a client of addr with Options(addr), closed when the test
// ends.
func Client(t testing.TB, addr string) *goredis.Client {
	t.Helper()
	c := goredis.NewClient(Options(addr))
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// ClusterClient returns a Cluster client of the Cluster server at addr,
// with ContextTimeoutEnabled as Options, closed when the test ends.
func ClusterClient(t testing.TB, addr string) *goredis.ClusterClient {
	t.Helper()
	c := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: []string{addr}, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// CommandCalls returns how many times the server has run each command
// since it started (INFO commandstats, keyed by command name such as
// "pexpire" or "evalsha"). Commands run by scripts count too. It talks over
// a plain connection of its own, so it adds nothing but its INFO, which
// later calls count under "info".
func (s *Server) CommandCalls(ctx context.Context) (map[string]int64, error) {
	text, err := s.info(ctx, "commandstats")
	if err != nil {
		return nil, fmt.Errorf("redistest: INFO commandstats: %w", err)
	}
	calls := make(map[string]int64)
	for _, line := range strings.Split(text, "\n") {
		// cmdstat_pexpire:calls=3,usec=12,...
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		field, _, _ := strings.Cut(rest, ",")
		n, err := strconv.ParseInt(strings.TrimPrefix(field, "calls="), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("redistest: INFO commandstats line %q: %w", line, err)
		}
		calls[strings.TrimPrefix(name, "cmdstat_")] = n
	}
	return calls, nil
}

// Evictions returns how many keys the server evicted under maxmemory
// since it started (INFO stats, evicted_keys).
func (s *Server) Evictions(ctx context.Context) (int64, error) {
	text, err := s.info(ctx, "stats")
	if err != nil {
		return 0, fmt.Errorf("redistest: INFO stats: %w", err)
	}
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "evicted_keys:"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("redistest: INFO stats has no evicted_keys")
}

// info sends INFO section on a fresh connection and returns the text.
func (s *Server) info(ctx context.Context, section string) (string, error) {
	return s.bulk(ctx, "INFO "+section)
}

// bulk sends an inline command whose reply is a bulk string on a fresh
// connection, and returns the string.
func (s *Server) bulk(ctx context.Context, command string) (string, error) {
	var text string
	err := s.exchange(ctx, command, func(r *bufio.Reader) error {
		head, err := r.ReadString('\n')
		if err != nil {
			return err
		}
		n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(head, "$")))
		if err != nil || !strings.HasPrefix(head, "$") {
			return fmt.Errorf("unexpected reply %q", head)
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(r, body); err != nil {
			return err
		}
		text = string(body)
		return nil
	})
	return text, err
}

// send sends an inline command whose reply is one line (a status or an
// error) on a fresh connection, and returns the line.
func (s *Server) send(ctx context.Context, command string) (string, error) {
	var line string
	err := s.exchange(ctx, command, func(r *bufio.Reader) error {
		l, err := r.ReadString('\n')
		line = strings.TrimSpace(l)
		return err
	})
	return line, err
}

// exchange sends command on a fresh connection and reads its reply with
// read, within ctx and 5 s.
func (s *Server) exchange(ctx context.Context, command string, read func(*bufio.Reader) error) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", s.Addr())
	if err != nil {
		return err
	}
	defer c.Close()
	deadline := time.Now().Add(5 * time.Second)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	_ = c.SetDeadline(deadline)
	if _, err := fmt.Fprintf(c, "%s\r\n", command); err != nil {
		return err
	}
	return read(bufio.NewReader(c))
}
