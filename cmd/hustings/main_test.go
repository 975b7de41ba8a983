package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/backends/zookeeper/zkdial"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// within bounds every wait on a command: generous, not a latency target.
const within = 30 * time.Second

// buffer is a bytes.Buffer safe for the command's goroutine and the
// test's.
type buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// result is what one run of the command did.
type result struct {
	code           int
	stdout, stderr string
	took           time.Duration
}

// runCmd runs the command with args to its end, opening --backend with
// open (dialOpen if nil).
func runCmd(t *testing.T, open opener, args ...string) result {
	t.Helper()
	if open == nil {
		open = dialOpen
	}
	var stdout, stderr buffer
	ctx, cancel := context.WithTimeout(t.Context(), within)
	defer cancel()
	start := time.Now()
	code := runWith(ctx, args, &stdout, &stderr, open)
	return result{code: code, stdout: stdout.String(), stderr: stderr.String(), took: time.Since(start)}
}

// oneLine fails the test unless s is exactly one line.
func oneLine(t *testing.T, what, s string) {
	t.Helper()
	if strings.Count(s, "\n") != 1 || !strings.HasSuffix(s, "\n") || !strings.HasPrefix(s, "hustings: ") {
		t.Fatalf("%s: stderr %q, want one line starting with \"hustings: \"", what, s)
	}
}

func TestHelpShowsTheCommands(t *testing.T) {
	r := runCmd(t, nil, "--help")
	if r.code != exitOK || r.stderr != "" {
		t.Fatalf("--help: exit %d, stderr %q; want 0 and nothing", r.code, r.stderr)
	}
	for _, want := range []string{"who ", "watch ", "list ", "exit codes: 0", "redis://", "Read-only"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("--help does not say %q:\n%s", want, r.stdout)
		}
	}
	for _, cmd := range []string{"who", "watch", "list"} {
		r := runCmd(t, nil, cmd, "--help")
		if r.code != exitOK || !strings.Contains(r.stdout, "-backend") || !strings.Contains(r.stdout, "usage: hustings "+cmd) {
			t.Errorf("%s --help: exit %d, stdout %q", cmd, r.code, r.stdout)
		}
	}
}

func TestBadUsageExits2(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"elect", "--backend", "memory", "x"},
		{"who", "x"},
		{"who", "--backend", "memory"},
		{"who", "--backend", "memory", "--bogus", "x"},
		{"who", "--backend", "memory", "--slots", "0", "x"},
		{"who", "--backend", "memory", "--dial-timeout", "0s", "x"},
		{"who", "--backend", "memory", "bad\x01name"},
		{"who", "--backend", "bogus://host", "x"},
		{"watch", "--backend", "redis://h:notaport", "x"},
		{"list", "--backend", "memory", "a", "b"},
		{"list", "--backend", "memory", "--json"},
	} {
		r := runCmd(t, nil, args...)
		if r.code != exitUsage || r.stdout != "" {
			t.Errorf("%q: exit %d, stdout %q; want 2 and nothing", args, r.code, r.stdout)
			continue
		}
		if len(args) > 0 { // no command at all prints the usage
			oneLine(t, strings.Join(args, " "), r.stderr)
		}
	}
}

// readOnly is a memory backend shared by the test and the command, which
// fails the test if the command opens a session on it.
type readOnly struct {
	*memory.Backend
	t *testing.T
}

func (r readOnly) Open(ctx context.Context, id string, ttl time.Duration) (backends.Session, error) {
	r.t.Errorf("the command opened a session for %q", id)
	return r.Backend.Open(ctx, id, ttl)
}

// shared returns an opener that gives the command b, and a session of b
// for the test's candidates.
func shared(t *testing.T) (opener, *memory.Backend) {
	b := memory.New()
	return func(context.Context, string, time.Duration, *slog.Logger) (backends.Backend, func(), error) {
		return readOnly{b, t}, func() {}, nil
	}, b
}

func TestWhoMemory(t *testing.T) {
	open, b := shared(t)
	whoShowsHolder(t, open, b, "memory")
}

func TestListMemory(t *testing.T) {
	open, b := shared(t)
	listLists(t, open, b, "memory")
}

func TestWatchMemory(t *testing.T) {
	open, b := shared(t)
	watchSeesTakeOver(t, open, b, "memory")
}

// whoShowsHolder checks who on the store at url, which b reaches too.
func whoShowsHolder(t *testing.T, open opener, b backends.Backend, url string) {
	ttl := ttlFor(url)
	s, err := b.Open(t.Context(), "alpha", ttl)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	tok, err := s.Acquire(t.Context(), "billing/reconcile", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Acquire(t.Context(), "rollups/slot-1", 0); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r := runCmd(t, open, "who", "--backend", url, "--dial-timeout", "30s", "billing/reconcile", "billing/free")
	if r.code != exitOK || r.stderr != "" {
		t.Fatalf("who: exit %d, stderr %q", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "billing/reconcile  held by alpha  token "+itoa(tok)) || lines[1] != "billing/free  free" {
		t.Fatalf("who printed\n%s\nwant billing/reconcile held by alpha under %d, billing/free free", r.stdout, tok)
	}
	h, err := b.Holder(t.Context(), "billing/reconcile")
	if err != nil {
		t.Fatal(err)
	}
	if !h.Expires.IsZero() && !strings.Contains(lines[0], "  expires ") {
		t.Fatalf("who printed %q: no expiry, though the store says %v", lines[0], h.Expires)
	}
	if h.Session != "" && !strings.HasSuffix(lines[0], "  session "+h.Session) {
		t.Fatalf("who printed %q: want session %s", lines[0], h.Session)
	}

	r = runCmd(t, open, "who", "--json", "--slots", "2", "--backend", url, "--dial-timeout", "30s", "rollups")
	var got []line
	for _, l := range strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n") {
		var x line
		if err := json.Unmarshal([]byte(l), &x); err != nil {
			t.Fatalf("who --json printed %q: %v", l, err)
		}
		got = append(got, x)
	}
	if r.code != exitOK || len(got) != 2 || got[0].Name != "rollups/slot-0" || got[0].Holder != "" ||
		got[1].Name != "rollups/slot-1" || got[1].Holder != "alpha" || got[1].Token == 0 {
		t.Fatalf("who --json --slots 2: exit %d, %+v; want slot 0 free, slot 1 held by alpha", r.code, got)
	}
	if e := got[1].Expires; !e.IsZero() && (e.Before(start.Add(-5*time.Second)) || e.After(time.Now().Add(ttl+5*time.Second))) {
		t.Fatalf("who --json: slot 1 expires %v, want within a TTL (%v) of %v", e, ttl, start)
	}
}

// listLists checks list on the store at url, which b reaches too.
func listLists(t *testing.T, open opener, b backends.Backend, url string) {
	s, err := b.Open(t.Context(), "alpha", ttlFor(url))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	prefix := "list-" + itoa(uint64(time.Now().UnixNano())) + "/"
	for _, n := range []string{"b", "a", "gone"} {
		tok, err := s.Acquire(t.Context(), prefix+n, 0)
		if err != nil {
			t.Fatal(err)
		}
		if n == "gone" {
			if err := s.Release(t.Context(), prefix+n, tok, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	r := runCmd(t, open, "list", "--backend", url, "--dial-timeout", "30s", prefix)
	if want := prefix + "a\n" + prefix + "b\n"; r.code != exitOK || r.stdout != want {
		t.Fatalf("list %s: exit %d, stdout %q, stderr %q; want %q", prefix, r.code, r.stdout, r.stderr, want)
	}
	r = runCmd(t, open, "list", "--backend", url, "--dial-timeout", "30s", prefix+"none")
	if r.code != exitOK || r.stdout != "" {
		t.Fatalf("list %snone: exit %d, stdout %q, stderr %q; want nothing", prefix, r.code, r.stdout, r.stderr)
	}
}

// watchSeesTakeOver checks that watch prints a line when a second
// candidate takes the lock over, on the store at url that b reaches too.
func watchSeesTakeOver(t *testing.T, open opener, b backends.Backend, url string) {
	if open == nil {
		open = dialOpen
	}
	name := "watch-" + itoa(uint64(time.Now().UnixNano()))
	a, err := b.Open(t.Context(), "alpha", ttlFor(url))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	tok, err := a.Acquire(t.Context(), name, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	var stdout, stderr buffer
	done := make(chan int, 1)
	go func() {
		done <- runWith(ctx, []string{"watch", "--backend", url, "--dial-timeout", "30s", name}, &stdout, &stderr, open)
	}()
	waitFor(t, &stdout, done, name+"  held by alpha  token "+itoa(tok))

	if err := a.Release(t.Context(), name, tok, 0); err != nil {
		t.Fatal(err)
	}
	bravo, err := b.Open(t.Context(), "bravo", ttlFor(url))
	if err != nil {
		t.Fatal(err)
	}
	defer bravo.Close(context.Background())
	next, err := bravo.Acquire(t.Context(), name, 0)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, &stdout, done, name+"  held by bravo  token "+itoa(next))
	stop()
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("watch ended with %d, stderr %q; want 0", code, stderr.String())
		}
	case <-time.After(within):
		t.Fatal("watch did not end with its context")
	}
	for _, l := range strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n") {
		if _, err := time.Parse("2006-01-02T15:04:05.000Z", strings.Fields(l)[0]); err != nil {
			t.Fatalf("watch printed %q: it does not start with the time: %v", l, err)
		}
	}
}

// ttlFor is the TTL of the test's sessions on the store at url: long,
// but within ZooKeeper's session timeout.
func ttlFor(url string) time.Duration {
	if strings.HasPrefix(url, "zk://") {
		return zkdial.SessionTimeout
	}
	return 10 * time.Second
}

// waitFor waits until out has a line containing want, or fails the test
// if the command ended first or within passes.
func waitFor(t *testing.T, out *buffer, done <-chan int, want string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !strings.Contains(out.String(), want) {
		select {
		case code := <-done:
			t.Fatalf("the command ended with %d before printing %q; it printed %q", code, want, out.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no line with %q within %v; got %q", want, within, out.String())
		}
	}
}

func TestListCannotList(t *testing.T) {
	open := func(context.Context, string, time.Duration, *slog.Logger) (backends.Backend, func(), error) {
		return cannotList{memory.New()}, func() {}, nil // a store that turns out unable to list
	}
	r := runCmd(t, open, "list", "--backend", "memory")
	if r.code != exitFailure || r.stdout != "" || !strings.Contains(r.stderr, "cannot list") {
		t.Fatalf("list on a store that cannot: exit %d, stderr %q; want 1 and a line saying it cannot list", r.code, r.stderr)
	}
	oneLine(t, "list", r.stderr)
}

// cannotList is a backend whose store cannot list, as a record store on a
// driver that cannot.
type cannotList struct{ backends.Backend }

func (cannotList) List(context.Context, string) ([]string, error) {
	return nil, fmt.Errorf("test: %w: this store cannot list its locks", errors.ErrUnsupported)
}

// TestUnreachableFailsInOneLine: a store nobody answers for fails each
// command within the dial timeout (plus a generous margin), with one line.
func TestUnreachableFailsInOneLine(t *testing.T) {
	port := closedPort(t)
	for _, url := range []string{"redis://" + port, "postgres://u@" + port + "/db", "etcd://" + port, "zk://" + port, "mysql://u@" + port + "/db", "nats://" + port} {
		for _, cmd := range [][]string{{"who", "x"}, {"watch", "x"}, {"list"}} {
			args := append([]string{cmd[0], "--backend", url, "--dial-timeout", "30s", "--dial-timeout", "2s"}, cmd[1:]...)
			r := runCmd(t, nil, args...)
			if r.code != exitFailure || r.stdout != "" || r.took > 2*time.Second+10*time.Second {
				t.Errorf("%q: exit %d after %v, stdout %q, stderr %q; want 1, nothing, within 12s", args, r.code, r.took, r.stdout, r.stderr)
				continue
			}
			oneLine(t, strings.Join(args, " "), r.stderr)
		}
	}
}

// closedPort returns host:port of a loopback port nobody listens on.
func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// itoa formats a token or a number for the lines the tests look for.
func itoa[T ~uint64](n T) string { return strconv.FormatUint(uint64(n), 10) }

// TestSilentStoreFailsWithinTheDefaultTimeout: a server that accepts
// connections and never answers fails each command within the default
// dial timeout, 5 s (plus a generous margin for a busy machine), with one
// line.
func TestSilentStoreFailsWithinTheDefaultTimeout(t *testing.T) {
	addr := silent(t)
	for _, url := range []string{"redis://" + addr, "postgres://u@" + addr + "/db", "etcd://" + addr, "mysql://u@" + addr + "/db"} {
		t.Run(strings.Split(url, ":")[0], func(t *testing.T) {
			t.Parallel()
			r := runCmd(t, nil, "who", "--backend", url, "x")
			if r.code != exitFailure || r.stdout != "" || r.took > defaultTimeout+5*time.Second {
				t.Fatalf("who on a silent %s: exit %d after %v, stdout %q, stderr %q; want 1, nothing, within %v", url, r.code, r.took, r.stdout, r.stderr, defaultTimeout+5*time.Second)
			}
			oneLine(t, url, r.stderr)
		})
	}
}

// silent returns host:port of a loopback listener that accepts
// connections and never writes to them; the test's cleanup closes it all.
func silent(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	})
	t.Cleanup(func() {
		_ = l.Close()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return l.Addr().String()
}
