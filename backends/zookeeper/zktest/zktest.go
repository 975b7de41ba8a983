// Package zktest starts a standalone ZooKeeper server (the Debian
// zookeeper package: /usr/share/java/zookeeper.jar) on a free loopback
// port, for the tests and benchmarks of package zookeeper. For tests and
// benchmarks only.
//
// The server runs with tickTime=200, so clients can negotiate session
// timeouts from 400 ms to 4 s. Stop kills it (SIGKILL, by PID); Restart
// starts it again on the same port and data directory, so its data, and the
// sessions whose clients reconnect in time, survive. A Server is safe for
// concurrent use.
package zktest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hustings/hustings/internal/testserver"
)

// Errors of this package.
var (
	// ErrNotInstalled: the ZooKeeper jar or java is missing.
	ErrNotInstalled = errors.New("zktest: ZooKeeper is not installed (Debian: apt-get install zookeeper)")
)

const (
	jar       = "/usr/share/java/zookeeper.jar" // its manifest names its dependencies
	logBinder = "/usr/share/java/slf4j-simple.jar"
	confDir   = "/etc/zookeeper/conf"
	mainClass = "org.apache.zookeeper.server.ZooKeeperServerMain"

	// TickTime is the server's tick: sessions can last 2 to 20 ticks.
	TickTime = 200 * time.Millisecond
	// startTimeout bounds the JVM's start-up.
	startTimeout = 60 * time.Second
)

// Server is one standalone ZooKeeper server process.
type Server struct {
	dir  string
	port int
	srv  *testserver.Server
}

// Start starts a server in a temporary directory of t and stops it when
// the test ends. It fails the test if the server does not start.
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := StartServer(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// StartServer starts a server whose configuration, data and log live in
// dir, and waits until it serves. The caller stops it with Stop.
func StartServer(dir string) (*Server, error) {
	java, err := findJava()
	if err != nil {
		return nil, err
	}
	port, err := testserver.FreePort()
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, port: port}
	if err := s.writeConfig(); err != nil {
		return nil, err
	}
	cp := confDir + ":" + jar
	if _, err := os.Stat(logBinder); err == nil {
		cp += ":" + logBinder // server warnings to the log file
	}
	args := []string{"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
		"-cp", cp, mainClass, filepath.Join(dir, "zoo.cfg")}
	s.srv = testserver.NewServer(testserver.Spec{Kit: "zktest", Dir: dir, Bin: java,
		Args: func(string) []string { return args }, Ready: s.serving, ReadyTimeout: startTimeout, Addr: s.Addr})
	if err := s.srv.Start(); err != nil {
		return nil, err
	}
	return s, nil
}

func findJava() (string, error) {
	if _, err := os.Stat(jar); err != nil {
		return "", ErrNotInstalled
	}
	java, err := exec.LookPath("java")
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrNotInstalled, err)
	}
	return java, nil
}

func (s *Server) writeConfig() error {
	data := filepath.Join(s.dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return fmt.Errorf("zktest: %w", err)
	}
	cfg := strings.Join([]string{
		"tickTime=" + strconv.Itoa(int(TickTime.Milliseconds())),
		"dataDir=" + data,
		"clientPort=" + strconv.Itoa(s.port),
		"clientPortAddress=127.0.0.1",
		"admin.enableServer=false",
		"4lw.commands.whitelist=ruok,srvr,mntr",
		"",
	}, "\n")
	if err := os.WriteFile(filepath.Join(s.dir, "zoo.cfg"), []byte(cfg), 0o644); err != nil {
		return fmt.Errorf("zktest: %w", err)
	}
	return nil
}

// serving asks the server for srvr: it answers with its mode only once it
// serves clients (ruok answers earlier).
func (s *Server) serving() error {
	out, err := s.fourLetter("srvr")
	if err != nil {
		return err
	}
	if !strings.Contains(out, "Mode: standalone") {
		return fmt.Errorf("zktest: not serving yet: %.80q", out)
	}
	return nil
}

// fourLetter sends a four-letter command and returns the answer.
func (s *Server) fourLetter(cmd string) (string, error) {
	c, err := net.DialTimeout("tcp", s.Addr(), time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(2 * time.Second)); err != nil {
		return "", err
	}
	if _, err := io.WriteString(c, cmd); err != nil {
		return "", err
	}
	b, err := io.ReadAll(c)
	return string(b), err
}

// Addr returns the server's host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Stop kills the server (SIGKILL) and waits for it to end. Calling it
// again, or on a stopped server, does nothing.
func (s *Server) Stop() { s.srv.Kill() }

// Restart kills the server if it runs and starts it again on the same port
// with the same data, then waits until it serves.
func (s *Server) Restart() error { return s.srv.Restart() }

// Log returns the tail of the server's output, for failure messages.
func (s *Server) Log() string { return s.srv.Log() }

// Mntr returns the server's monitoring counters (the mntr command), such
// as zk_packets_received.
func (s *Server) Mntr() (map[string]int64, error) {
	out, err := s.fourLetter("mntr")
	if err != nil {
		return nil, fmt.Errorf("zktest: mntr: %w", err)
	}
	stats := make(map[string]int64)
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "\t")
		if n, err := strconv.ParseInt(v, 10, 64); ok && err == nil {
			stats[k] = n
		}
	}
	if len(stats) == 0 {
		return nil, fmt.Errorf("zktest: mntr: no counters in %.80q", out)
	}
	return stats, nil
}

// Connect connects to the server (see Dial).
func (s *Server) Connect(timeout time.Duration) (*zk.Conn, error) {
	return Dial(s.Addr(), timeout)
}

// Dial connects to addr, a server or a proxy in front of one, asking for a
// session timeout of timeout, with go-zookeeper's logging off, and waits
// up to 10 s for the session. The caller closes the conn.
func Dial(addr string, timeout time.Duration) (*zk.Conn, error) {
	conn, _, err := zk.Connect([]string{addr}, timeout, zk.WithLogger(nopLogger{}), zk.WithLogInfo(false))
	if err != nil {
		return nil, fmt.Errorf("zktest: connect %s: %w", addr, err)
	}
	if err := WaitSession(conn, 10*time.Second); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// WaitSession waits up to d for conn to have a session.
func WaitSession(conn *zk.Conn, d time.Duration) error {
	deadline := time.Now().Add(d)
	for conn.State() != zk.StateHasSession {
		if time.Now().After(deadline) {
			return fmt.Errorf("zktest: no session after %v (state %v)", d, conn.State())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// nopLogger discards go-zookeeper's log lines.
type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}
