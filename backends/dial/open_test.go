package dial_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/backendtest"
	"github.com/hustings/hustings/backends/dial"
	"github.com/hustings/hustings/backends/etcd/etcdtest"
	"github.com/hustings/hustings/backends/mysql/mysqltest"
	"github.com/hustings/hustings/backends/nats/natstest"
	"github.com/hustings/hustings/backends/postgres/pgtest"
	"github.com/hustings/hustings/backends/redis/redistest"
	"github.com/hustings/hustings/backends/zookeeper/zktest"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/testserver"
)

// openEnv, set to a URL, makes this test binary open it with dial.Open
// (see TestMain and openInChild) instead of running the tests.
const openEnv = "HUSTINGS_DIAL_OPEN"

func TestMain(m *testing.M) {
	if url := os.Getenv(openEnv); url != "" {
		openAndReport(url)
		return
	}
	goleak.VerifyTestMain(m)
}

// openResult is what a child process reports of its Open.
type openResult struct {
	Err     string        `json:"err"`
	Elapsed time.Duration `json:"elapsed"`
}

// openAndReport opens url with a 1 s dial timeout and prints the result
// as one JSON line on stdout; anything else the process writes is a test
// failure of the parent.
func openAndReport(url string) {
	start := time.Now()
	_, closeBackend, err := dial.Open(context.Background(), url, dial.WithTimeout(time.Second))
	res := openResult{Elapsed: time.Since(start)}
	if err == nil {
		closeBackend()
		res.Err = "<nil>"
	} else if !errors.Is(err, dial.ErrUnreachable) {
		res.Err = "not ErrUnreachable: " + err.Error()
	} else {
		res.Err = err.Error()
	}
	_ = json.NewEncoder(os.Stdout).Encode(res)
}

// elect runs one campaign on the backend at url until it is elected.
func elect(t *testing.T, url string) {
	t.Helper()
	b, closeBackend, err := dial.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer closeBackend()
	r := backendtest.Record(t, b, "dial-test", "dial", campaign.WithTTL(2*time.Second))
	defer r.Stop()
	r.Expect(t, events.Elected, 30*time.Second)
}

func TestOpen(t *testing.T) {
	rs := redistest.Start(t)
	es := etcdtest.Start(t)
	zs := zktest.Start(t)
	ps := pgtest.Start(t)
	ns := natstest.Start(t)
	for _, url := range []string{"memory", "redis://" + rs.Addr() + "/1", "etcd://" + es.Addr(), "zk://" + zs.Addr() + "/dial-test",
		pgtest.DSN(ps.Addr()), strings.Replace(pgtest.DSN(ps.Addr()), "postgres://", "postgresql://", 1),
		ns.URL(), ns.URL() + "/dial_test"} {
		t.Run(url, func(t *testing.T) { elect(t, url) })
	}
}

// TestOpenMySQL elects a leader through a mysql:// URL on a real
// MariaDB, twice (Migrate is idempotent).
func TestOpenMySQL(t *testing.T) {
	ms := mysqltest.Start(t)
	url := "mysql://root@" + ms.Addr() + "/" + mysqltest.Database
	for _, u := range []string{url, strings.Replace(url, "mysql://", "mariadb://", 1)} {
		t.Run(u, func(t *testing.T) { elect(t, u) })
	}
}

// TestOpenUnreachable: on every backend, a dial to a closed loopback port
// fails within the dial timeout with one line that names the URL and the
// cause, and nothing is written to stderr (each dial runs in a child
// process, whose stderr the test reads whole).
func TestOpenUnreachable(t *testing.T) {
	port, err := testserver.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port) // nobody listens: a moment ago it was free
	for _, url := range []string{"redis://" + addr, "etcd://" + addr, "zk://" + addr, "postgres://" + addr + "/postgres", "mysql://u@" + addr + "/db", "nats://" + addr} {
		t.Run(url, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), openEnv+"="+url)
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("child: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
			}
			if stderr.Len() > 0 {
				t.Errorf("the child wrote to stderr:\n%s", stderr.String())
			}
			var res openResult
			if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
				t.Fatalf("child's stdout %q: %v", stdout.String(), err)
			}
			t.Logf("%v: %s", res.Elapsed, res.Err)
			if !strings.Contains(res.Err, "dial: cannot reach "+url[:strings.Index(url, addr)+len(addr)]) ||
				!strings.Contains(res.Err, "connection refused") || strings.Contains(res.Err, "\n") {
				t.Errorf("error %q, want one line naming the URL and the refused connection", res.Err)
			}
			if res.Elapsed > 5*time.Second { // the timeout is 1 s; generous for a loaded machine
				t.Errorf("Open took %v with a dial timeout of 1s", res.Elapsed)
			}
		})
	}
}

// TestEtcdOutlivesOpenContext: the client Open made keeps working after
// Open's ctx was cancelled.
func TestEtcdOutlivesOpenContext(t *testing.T) {
	es := etcdtest.Start(t)
	ctx, cancel := context.WithCancel(t.Context())
	b, closeBackend, err := dial.Open(ctx, "etcd://"+es.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer closeBackend()
	cancel()
	s, err := b.Open(t.Context(), "after-cancel", 2*time.Second)
	if err != nil {
		t.Fatalf("Open of a session after Open's ctx ended: %v", err)
	}
	defer s.Close(t.Context())
	if _, err := s.Acquire(t.Context(), "dial-after-cancel", 0); err != nil {
		t.Fatalf("Acquire after Open's ctx ended: %v", err)
	}
}

// TestOpenEtcdNeedsAServer: with nothing listening, Open of etcd fails
// (the client connects lazily: Open must make a request).
func TestOpenEtcdNeedsAServer(t *testing.T) {
	port, err := testserver.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = dial.Open(t.Context(), fmt.Sprintf("etcd://127.0.0.1:%d", port), dial.WithTimeout(500*time.Millisecond))
	if !errors.Is(err, dial.ErrUnreachable) || !strings.Contains(err.Error(), "within 500ms") {
		t.Fatalf("Open with nothing listening = %v, want ErrUnreachable within 500ms", err)
	}
}

// TestClientLogsGoToTheLogger: the clients' own lines about the failed
// dials reach WithLogger's logger, at debug level, naming the client.
func TestClientLogsGoToTheLogger(t *testing.T) {
	port, err := testserver.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for _, tc := range []struct{ url, client string }{
		{"redis://" + addr, "redis"},
		{"zk://" + addr, "zookeeper"},
		{"etcd://" + addr, "etcd"},
	} {
		t.Run(tc.url, func(t *testing.T) {
			h := &recordHandler{}
			_, _, err := dial.Open(t.Context(), tc.url, dial.WithTimeout(1500*time.Millisecond), dial.WithLogger(slog.New(h)))
			if !errors.Is(err, dial.ErrUnreachable) {
				t.Fatalf("Open = %v, want ErrUnreachable", err)
			}
			lines := h.lines()
			if len(lines) == 0 {
				t.Fatalf("the %s client logged nothing to the logger", tc.client)
			}
			for _, l := range lines {
				if !strings.Contains(l, "level=DEBUG") || !strings.Contains(l, "client="+tc.client) {
					t.Errorf("line %q: want debug level and client=%s", l, tc.client)
				}
			}
		})
	}
}

func TestBadTimeout(t *testing.T) {
	if _, _, err := dial.Open(t.Context(), "memory", dial.WithTimeout(0)); !errors.Is(err, backends.ErrInvalid) {
		t.Fatalf("Open with a zero timeout = %v, want ErrInvalid", err)
	}
}

// recordHandler keeps every record as one text line.
type recordHandler struct {
	mu  sync.Mutex
	out []string
}

func (h *recordHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *recordHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "level=%v msg=%q", r.Level, r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	h.out = append(h.out, b.String())
	return nil
}

func (h *recordHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordHandler) WithGroup(string) slog.Handler      { return h }

func (h *recordHandler) lines() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.out...)
}
