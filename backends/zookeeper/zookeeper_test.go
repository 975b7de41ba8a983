package zookeeper_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/zookeeper"
)

// TestNewRejects: bad configuration is ErrInvalid, found before any I/O.
func TestNewRejects(t *testing.T) {
	conn := dial(t, server(t).Addr(), 4*time.Second)
	cases := []struct {
		name string
		opts []zookeeper.Option
	}{
		{"relative root", []zookeeper.Option{zookeeper.WithRoot("hustings")}},
		{"slash root", []zookeeper.Option{zookeeper.WithRoot("/")}},
		{"trailing slash", []zookeeper.Option{zookeeper.WithRoot("/a/")}},
		{"empty segment", []zookeeper.Option{zookeeper.WithRoot("/a//b")}},
		{"dot segment", []zookeeper.Option{zookeeper.WithRoot("/a/./b")}},
		{"reserved", []zookeeper.Option{zookeeper.WithRoot("/zookeeper/x")}},
		{"control", []zookeeper.Option{zookeeper.WithRoot("/a\x01")}},
		{"zero timeout", []zookeeper.Option{zookeeper.WithSessionTimeout(0)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := zookeeper.New(conn, c.opts...); !errors.Is(err, backends.ErrInvalid) {
				t.Fatalf("New: %v, want ErrInvalid", err)
			}
		})
	}
	if _, err := zookeeper.New(nil); !errors.Is(err, backends.ErrInvalid) {
		t.Fatalf("New(nil): %v, want ErrInvalid", err)
	}
}

// TestTTLAboveSessionTimeout: a TTL the ZooKeeper session cannot back is
// ErrInvalid, naming the maximum.
func TestTTLAboveSessionTimeout(t *testing.T) {
	const timeout = 2 * time.Second
	b := newBackend(t, dial(t, server(t).Addr(), timeout), timeout)
	_, err := b.Open(t.Context(), "a", timeout+time.Millisecond)
	if !errors.Is(err, backends.ErrInvalid) || !strings.Contains(err.Error(), timeout.String()) {
		t.Fatalf("Open with a TTL above the session timeout: %v, want ErrInvalid naming %v", err, timeout)
	}
	s, err := b.Open(t.Context(), "a", timeout)
	if err != nil {
		t.Fatalf("Open with a TTL equal to the session timeout: %v", err)
	}
	_ = s.Close(t.Context())
}

// TestNamesAreOneSegment: names with slashes, dots, percent signs and any
// Unicode are stored, each as one node of its own under root/locks.
func TestNamesAreOneSegment(t *testing.T) {
	const timeout = 2 * time.Second
	conn := dial(t, server(t).Addr(), timeout)
	b := newBackend(t, conn, timeout)
	s, err := b.Open(t.Context(), "a", timeout)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(t.Context())
	names := []string{"svc/nightly", "/", ".", "..", "a%2Fb", "a/b", "ünï cödé", "\ue000private", "\U0001F600", "zookeeper", "hold", "x-0000000001"}
	for _, name := range names {
		tok, err := s.Acquire(t.Context(), name, 0)
		if err != nil {
			t.Fatalf("Acquire(%q): %v", name, err)
		}
		if h, err := b.Holder(t.Context(), name); err != nil || h.ID != "a" || h.Token != tok {
			t.Fatalf("Holder(%q) = %+v, %v; want a, %d", name, h, err, tok)
		}
	}
	kids, _, err := conn.Children(root(t) + "/locks")
	if err != nil {
		t.Fatal(err)
	}
	if len(kids) != len(names) {
		t.Fatalf("%d lock nodes for %d names: %q", len(kids), len(names), kids)
	}
}

// TestWaiterWatchesItsPredecessor: of two queued candidates, only the
// first is woken when the holder releases; the second is woken when the
// first goes.
func TestWaiterWatchesItsPredecessor(t *testing.T) {
	const timeout = 4 * time.Second
	addr := server(t).Addr()
	ctx := t.Context()
	var sessions []backends.Session
	var watchers []backends.Backend
	for _, id := range []string{"a", "b", "c"} {
		b := newBackend(t, dial(t, addr, timeout), timeout) // one Backend per candidate, as in three processes
		s, err := b.Open(ctx, id, timeout)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close(ctx) })
		sessions, watchers = append(sessions, s), append(watchers, b)
	}
	a, b, c := sessions[0], sessions[1], sessions[2]
	tok, err := a.Acquire(ctx, "job", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []backends.Session{b, c} {
		if _, err := s.Acquire(ctx, "job", 0); !errors.Is(err, backends.ErrHeld) {
			t.Fatalf("%s: Acquire of a held lock: %v, want ErrHeld", s.ID(), err)
		}
	}
	wb, err := watchers[1].Watch(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	wc, err := watchers[2].Watch(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx, "job", tok, 0); err != nil {
		t.Fatal(err)
	}
	woken(t, wb, "b after a's release")
	notWoken(t, wc, "c after a's release")
	tokB, err := b.Acquire(ctx, "job", 0)
	if err != nil || tokB <= tok {
		t.Fatalf("b: Acquire after a's release: %d, %v; want a token > %d", tokB, err, tok)
	}
	if err := b.Release(ctx, "job", tokB, 0); err != nil {
		t.Fatal(err)
	}
	woken(t, wc, "c after b's release")
	if tokC, err := c.Acquire(ctx, "job", 0); err != nil || tokC <= tokB {
		t.Fatalf("c: Acquire after b's release: %d, %v; want a token > %d", tokC, err, tokB)
	}
}

func woken(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case _, ok := <-ch:
		if !ok {
			t.Fatalf("watch closed, want a signal: %s", what)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no signal: %s", what)
	}
}

func notWoken(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
		t.Fatalf("signal: %s", what)
	case <-time.After(300 * time.Millisecond):
	}
}
