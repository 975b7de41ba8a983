package all_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hustings/hustings/backends/dial"
	_ "github.com/hustings/hustings/backends/dial/all"
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
	for _, url := range []string{"redis://" + addr, "etcd://" + addr, "zk://" + addr, "postgres://" + addr + "/postgres", "mysql://u@" + addr + "/db", "nats://" + addr, "consul://" + addr, "mongodb://" + addr, "dynamodb://" + addr} {
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

// TestUsageListsEveryScheme: with every opener imported, Usage names each
// store once, in the form its opener gives.
func TestUsageListsEveryScheme(t *testing.T) {
	want := []string{"memory", "redis://host:port[/db]", "etcd://host:port[,host:port…]", "zk://host:port[,host:port…][/root]",
		"postgres://[user@]host:port/db", "mysql://user@host:port/db", "nats://host:port[,host:port…][/bucket]", "k8s://[/?kubeconfig=path&namespace=ns]",
		"consul://host:port[/prefix]", "mongodb://", "dynamodb://"}
	u := dial.Usage()
	for _, w := range want {
		if !strings.Contains(u, w) {
			t.Errorf("Usage() = %q, want %s in it", u, w)
		}
	}
	if n := strings.Count(u, " | ") + 1; n != len(want) {
		t.Errorf("Usage() = %q: %d forms, want %d (one per store)", u, n, len(want))
	}
}

// FuzzParse: with every opener registered, Parse never panics, every
// error matches ErrURL and is one short line, and what it accepts prints
// as a URL that parses to the same target.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"memory", "MEMORY", "memory://", "", "redis://h:1/2", "REDIS://h:1", "etcd://a:1,b:2",
		"zk://h:1/root", "zk://h:1,h:2/", "zk://h:1/zookeeper", "zk://h:1/a%3Fb", "%zz", "redis://[::1]:6379", "foo://", "postgres://u:p@h:1/db?sslmode=disable", "postgresql://h:1,h:2/db", "mysql://u:p@h:1/db",
		"nats://h:1/b", "k8s:///?namespace=n", "redis://" + strings.Repeat("h", 300) + ":1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got, err := dial.Parse(raw)
		if err != nil {
			if !errors.Is(err, dial.ErrURL) {
				t.Fatalf("Parse(%q) = %v, not an ErrURL", raw, err)
			}
			if msg := err.Error(); strings.Contains(msg, "\n") || len(msg) > 600 {
				t.Fatalf("Parse(%q): error of %d bytes or several lines: %q", raw, len(msg), msg)
			}
			return
		}
		again, err := dial.Parse(got.String())
		if err != nil || !reflect.DeepEqual(again, got) {
			t.Fatalf("Parse(%q) = %+v; its String %q parses to %+v, %v", raw, got, got.String(), again, err)
		}
	})
}
