package dynamotest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/hustings/hustings/internal/testserver"
)

// Version is the dynalite version the tests run; tools/dynalite/package.json
// names the same.
const Version = "4.0.0"

// DirEnv names the environment variable that, when set, is the directory
// dynalite is installed in (its node_modules/dynalite/cli.js), in place of
// the per-machine cache.
const DirEnv = "HUSTINGS_DYNALITE"

// NodeEnv names the environment variable that, when set, is the path of
// the node binary, in place of the one on the PATH.
const NodeEnv = "HUSTINGS_NODE"

// Region is the region clients of the server name; dynalite accepts any.
const Region = "us-east-1"

// AccessKey and SecretKey are the static credentials clients sign with;
// dynalite checks that requests are signed, not by whom.
const (
	AccessKey = "hustings"
	SecretKey = "hustings"
)

// readyTimeout bounds how long a start waits for the server to answer.
const readyTimeout = 30 * time.Second

// Server is one dynalite process on 127.0.0.1, restartable on the same
// port (and, if Persistent, the same store).
type Server struct {
	cli     string
	guard   string // guardJS, preloaded
	port    int
	persist bool
	srv     *testserver.Server
}

// Option configures a server.
type Option func(*Server)

// Persistent keeps the tables in a LevelDB store in the server's
// temporary directory (dynalite --path), so that they survive Kill and
// Restart. Without it they are in the process's memory, and a restarted
// server has none.
func Persistent() Option { return func(s *Server) { s.persist = true } }

// CLI returns the path of dynalite's cli.js: under $HUSTINGS_DYNALITE if
// set, otherwise under <user cache dir>/hustings/dynalite-<Version>/, where
// <user cache dir> is os.UserCacheDir ($XDG_CACHE_HOME, or $HOME/.cache, on
// Linux), as tools/dynalite/install.sh installs it. It returns an error
// saying how to install dynalite if it is not there.
func CLI() (string, error) {
	dir := os.Getenv(DirEnv)
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("dynamotest: %w", err)
		}
		dir = filepath.Join(cache, "hustings", "dynalite-"+Version)
	}
	path := filepath.Join(dir, "node_modules", "dynalite", "cli.js")
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("dynamotest: dynalite %s is not installed (%w); install it once per machine "+
			"with `make dynalite` from the repository root (tools/dynalite/install.sh, about 20 s)", Version, err)
	}
	return path, nil
}

// node returns the path of the node binary.
func node() (string, error) {
	if path := os.Getenv(NodeEnv); path != "" {
		return path, nil
	}
	path, err := exec.LookPath("node")
	if err != nil {
		return "", fmt.Errorf("dynamotest: node not found (dynalite runs on Node.js 20 or later); on Debian: apt-get install nodejs: %w", err)
	}
	return path, nil
}

// Start starts a server for t and stops it when the test ends. It fails
// the test if the server does not start, or if dynalite is not installed.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s, err := StartServer(opts...)
	return testserver.Must(t, s, err)
}

// StartServer starts a server in a new temporary directory and waits until
// it answers. The caller stops it with Stop.
func StartServer(opts ...Option) (*Server, error) {
	cli, err := CLI()
	if err != nil {
		return nil, err
	}
	bin, err := node()
	if err != nil {
		return nil, err
	}
	guard, err := writeGuard()
	if err != nil {
		return nil, err
	}
	s := &Server{cli: cli, guard: guard}
	for _, o := range opts {
		o(s)
	}
	s.srv, err = testserver.Run(testserver.Spec{Kit: "dynamotest", Bin: bin,
		Args: s.args, Ready: s.ready, ReadyTimeout: readyTimeout, Addr: s.Addr}, &s.port)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// args are node's arguments: dynalite on s's port (and store, in dir).
func (s *Server) args(dir string) []string {
	// Tables are ACTIVE at once (dynalite's default keeps them CREATING
	// for 500 ms, as a stand-in for DynamoDB's minutes).
	// guard keeps the server up when a client aborts a request it was
	// sending: dynalite 4.0.0 throws the request's ECONNRESET ("aborted",
	// index.js: req.on('error', function (err) { throw err })), which
	// ends the process, so a client that cancels a context mid-request
	// (a campaign closing) would crash the server.
	args := []string{"--require", s.guard, s.cli, "--host", "127.0.0.1", "--port", strconv.Itoa(s.port),
		"--createTableMs", "0", "--deleteTableMs", "0", "--updateTableMs", "0"}
	if s.persist {
		args = append(args, "--path", filepath.Join(dir, "db"))
	}
	return args
}

// ready returns nil once the server answers ListTables.
func (s *Server) ready() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := s.Client().ListTables(ctx, &dynamodb.ListTablesInput{})
	return err
}

// guardJS is preloaded into the server: an aborted request's
// ECONNRESET is logged, not fatal; any other uncaught exception still
// ends the process.
const guardJS = `process.on('uncaughtException', function (err) {
  if (err && err.code === 'ECONNRESET') { console.error('dynamotest: a client aborted a request: ' + err.message); return }
  console.error(err && err.stack || err); process.exit(1)
})
`

// writeGuard writes guardJS where every server of the machine preloads
// it from (the system's temporary directory; the same content each time,
// renamed into place so that concurrent starts never see half of it), and
// returns its path.
func writeGuard() (string, error) {
	path := filepath.Join(os.TempDir(), "hustings-dynamotest-guard-"+Version+".js")
	if b, err := os.ReadFile(path); err == nil && string(b) == guardJS {
		return path, nil
	}
	f, err := os.CreateTemp(os.TempDir(), "hustings-dynamotest-guard-*.js")
	if err != nil {
		return "", fmt.Errorf("dynamotest: %w", err)
	}
	_, werr := f.WriteString(guardJS)
	if err := errors.Join(werr, f.Close()); err != nil {
		_ = os.Remove(f.Name())
		return "", fmt.Errorf("dynamotest: %w", err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		_ = os.Remove(f.Name())
		return "", fmt.Errorf("dynamotest: %w", err)
	}
	return path, nil
}

// Addr returns the server's address, 127.0.0.1:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Endpoint returns the server's endpoint URL, http://127.0.0.1:port, for a
// client's BaseEndpoint.
func (s *Server) Endpoint() string { return "http://" + s.Addr() }

// Client returns a new client of the server, as NewClient makes it.
func (s *Server) Client(opts ...func(*dynamodb.Options)) *dynamodb.Client {
	return NewClient(s.Endpoint(), opts...)
}

// NewClient returns a client of the server (or a link to one) at the
// endpoint URL: Region, the static credentials AccessKey and SecretKey,
// and no retries by the SDK (a test sees each error; pass an option to
// change any of it). It reads no AWS configuration or environment.
func NewClient(endpoint string, opts ...func(*dynamodb.Options)) *dynamodb.Client {
	o := dynamodb.Options{
		Region:           Region,
		BaseEndpoint:     aws.String(endpoint),
		Credentials:      credentials.NewStaticCredentialsProvider(AccessKey, SecretKey, ""),
		RetryMaxAttempts: 1,
	}
	return dynamodb.New(o, opts...)
}

// PID returns the server's process ID, or 0 while it is killed or stopped.
func (s *Server) PID() int { return s.srv.PID() }

// Log returns the tail of the server's output, for failure messages.
func (s *Server) Log() string { return s.srv.Log() }

// Kill ends the server with SIGKILL (by PID), as a crash: clients get
// errors until Restart. Killing a killed server does nothing.
func (s *Server) Kill() { s.srv.Kill() }

// Restart kills the server if it runs, and starts it again on the same
// port; a Persistent server keeps its tables and items, any other comes
// back empty. It returns once the server answers.
func (s *Server) Restart() error { return s.srv.Restart() }

// Stop kills the server (SIGKILL, by PID) and removes its directory.
// Calling it again does nothing.
func (s *Server) Stop() { s.srv.Stop() }
