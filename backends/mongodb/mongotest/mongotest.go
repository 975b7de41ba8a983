package mongotest

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"

	"github.com/hustings/hustings/internal/testserver"
)

// Version is the FerretDB version the tests run; the tools module
// (tools/ferretdb/go.mod) requires the same.
const Version = "v1.24.2"

// BinaryEnv names the environment variable that, when set, is the path of
// the ferretdb binary, in place of the per-machine cache.
const BinaryEnv = "HUSTINGS_FERRETDB"

// Database is the database the tests' collections go in. FerretDB makes a
// database (a SQLite file) on its first write, as MongoDB does.
const Database = "hustings"

// readyTimeout bounds how long a start waits for the server to answer a
// ping.
const readyTimeout = 30 * time.Second

// Server is one FerretDB process on 127.0.0.1 over SQLite files in its
// own temporary directory, restartable on the same port and files.
type Server struct {
	port int
	srv  *testserver.Server
}

// Binary returns the path of the ferretdb binary: $HUSTINGS_FERRETDB if
// set, otherwise <user cache dir>/hustings/ferretdb-<Version>/ferretdb,
// where <user cache dir> is os.UserCacheDir ($XDG_CACHE_HOME, or
// $HOME/.cache, on Linux), as tools/ferretdb/build.sh writes it. It returns
// an error saying how to build the binary if there is none.
func Binary() (string, error) {
	return testserver.Built("mongotest", BinaryEnv, "ferretdb", Version,
		"`make ferretdb` from the repository root (tools/ferretdb/build.sh, a few minutes)")
}

// Start starts a server for t and stops it when the test ends. It fails
// the test if the server does not start, or if the binary is not built.
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := StartServer()
	return testserver.Must(t, s, err)
}

// StartServer starts a server in a new temporary directory and waits until
// it answers a ping. The caller stops it with Stop.
func StartServer() (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	s := &Server{}
	s.srv, err = testserver.Run(testserver.Spec{
		Kit: "mongotest", Subdirs: []string{"data", "state"}, Bin: bin,
		Args: s.args, Ready: s.ready, ReadyTimeout: readyTimeout, Addr: s.Addr,
	}, &s.port)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// args are the server's flags, for s's port and the files in dir.
func (s *Server) args(dir string) []string {
	return []string{
		"--listen-addr=" + s.Addr(),
		"--handler=sqlite",
		"--sqlite-url=file:" + filepath.Join(dir, "data") + "/",
		"--state-dir=" + filepath.Join(dir, "state"),
		"--debug-addr=-",      // no metrics listener on a fixed port
		"--telemetry=disable", // never call home
		"--log-level=WARN",
	}
}

// ready returns nil once the server answers a ping.
func (s *Server) ready() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c, err := Connect(s.URI(), options.Client().SetServerSelectionTimeout(time.Second))
	if err != nil {
		return err
	}
	defer func() { _ = c.Disconnect(context.Background()) }()
	return c.Ping(ctx, readpref.Primary())
}

// Addr returns the server's address, 127.0.0.1:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// URI returns the server's connection string, as URI makes it.
func (s *Server) URI() string { return URI(s.Addr()) }

// URI returns the connection string of a server (or a link to one) at
// addr: mongodb://addr/?directConnection=true (FerretDB is a single
// server, not a replica set).
func URI(addr string) string { return "mongodb://" + addr + "/?directConnection=true" }

// Connect returns a client of the server at uri, with short timeouts a
// test wants (connecting and selecting a server in 5 s), then opts. The
// driver connects lazily: an error here is of the options, not of the
// server. The caller disconnects it.
func Connect(uri string, opts ...*options.ClientOptions) (*mongo.Client, error) {
	base := options.Client().ApplyURI(uri).
		SetConnectTimeout(5 * time.Second).
		SetServerSelectionTimeout(5 * time.Second)
	c, err := mongo.Connect(append([]*options.ClientOptions{base}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("mongotest: connect %s: %w", uri, err)
	}
	return c, nil
}

// Client is Connect for t: it fails the test if Connect fails, and
// disconnects the client when the test ends.
func Client(t testing.TB, uri string, opts ...*options.ClientOptions) *mongo.Client {
	t.Helper()
	c, err := Connect(uri, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	return c
}

// PID returns the server's process ID, or 0 while it is killed or stopped.
func (s *Server) PID() int { return s.srv.PID() }

// Log returns the tail of the server's output, for failure messages.
func (s *Server) Log() string { return s.srv.Log() }

// Kill ends the server with SIGKILL (by PID), as a crash: clients get
// errors until Restart; the SQLite files stay. Killing a killed server
// does nothing.
func (s *Server) Kill() { s.srv.Kill() }

// Pause stops the server with SIGSTOP and returns once the kernel has
// stopped it: connections stay open and nothing answers, as a server
// stalled by the machine. Resume undoes it.
func (s *Server) Pause() error { return s.srv.Pause() }

// Resume continues a paused server (SIGCONT).
func (s *Server) Resume() error { return s.srv.Resume() }

// Restart kills the server if it runs, and starts it again on the same
// port and SQLite files: committed documents survive. It returns once the
// server answers a ping.
func (s *Server) Restart() error { return s.srv.Restart() }

// Stop kills the server (SIGKILL, by PID) and removes its directory.
// Calling it again does nothing.
func (s *Server) Stop() { s.srv.Stop() }
