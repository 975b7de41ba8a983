package zookeeper_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/backendtest"
	"github.com/hustings/hustings/backends/zookeeper"
	"github.com/hustings/hustings/strategy"
)

// TestOneShotIsTwoWrites: a session opened to take one lock and closed
// (campaign.RunIfLeader without a session) makes two requests: Open makes
// none, the Acquire creates the session node with the lock's node in one
// transaction (as many requests as the Acquire of a session made before),
// and Close deletes both in another.
func TestOneShotIsTwoWrites(t *testing.T) {
	conn := dial(t, server(t).Addr(), queueTimeout)
	b := newBackend(t, conn, queueTimeout)
	first := backendtest.Open(t, b, "first", queueTimeout)
	backendtest.Acquire(t, first, "warm") // the roots exist
	calls := zookeeper.CountCalls(b)
	backendtest.Acquire(t, first, "other")
	base := calls.Load() // a made session's Acquire of a new name: the lock's parent is made too
	calls.Store(0)
	s, err := b.Open(t.Context(), "once", queueTimeout)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("Open made %d requests, want none", n)
	}
	if got := sessionNodes(t, conn); len(got) != 1 {
		t.Errorf("session nodes after Open: %q, want only the first session's", got)
	}
	tok := backendtest.Acquire(t, s, "job")
	if n := calls.Load(); n != base {
		t.Errorf("the first Acquire made %d requests, want %d, as a made session's", n, base)
	}
	if got := sessionNodes(t, conn); len(got) != 2 {
		t.Errorf("session nodes after the first Acquire: %q, want two", got)
	}
	if h, err := b.Holder(t.Context(), "job"); err != nil || h.ID != "once" || h.Token != tok {
		t.Fatalf("Holder = %+v, %v; want once, %d", h, err, tok)
	}
	calls.Store(0)
	if err := s.Close(t.Context()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("Close made %d requests, want 1", n)
	}
	if got := sessionNodes(t, conn); len(got) != 1 {
		t.Errorf("session nodes after Close: %q, want only the first session's", got)
	}
	if h, err := b.Holder(t.Context(), "job"); err != nil || h.ID != "" {
		t.Fatalf("Holder after Close = %+v, %v; want free", h, err)
	}
}

// TestFirstCallsOpenTheSession: whichever call comes first — an Acquire
// that finds the lock free, one that finds it held, a Register, a
// KeepAlive — creates the session node with what it writes, and the
// session is then like any other: a rival sees its lock held, its entry
// listed, its KeepAlive renews.
func TestFirstCallsOpenTheSession(t *testing.T) {
	conn := dial(t, server(t).Addr(), queueTimeout)
	b := newBackend(t, conn, queueTimeout)
	holder := backendtest.Open(t, b, "holder", queueTimeout)
	tok := backendtest.Acquire(t, holder, "job")
	nodes := len(sessionNodes(t, conn))
	first := map[string]func(s backends.Session) error{
		"Acquire of a free lock": func(s backends.Session) error { _, err := s.Acquire(t.Context(), "free", 0); return err },
		"Acquire of a held lock": func(s backends.Session) error {
			if _, err := s.Acquire(t.Context(), "job", 0); !errors.Is(err, backends.ErrHeld) {
				return fmt.Errorf("Acquire of a held lock: %v, want ErrHeld", err)
			}
			return nil
		},
		"Register": func(s backends.Session) error {
			_, err := s.Register(t.Context(), "group", strategy.Candidate{ID: s.ID()})
			return err
		},
		"KeepAlive": func(s backends.Session) error { return s.KeepAlive(t.Context()) },
	}
	for what, call := range first {
		s := backendtest.Open(t, b, what, queueTimeout)
		if err := call(s); err != nil {
			t.Fatalf("%s as the first call: %v", what, err)
		}
		nodes++
		if got := len(sessionNodes(t, conn)); got != nodes {
			t.Fatalf("%d session nodes after %s as the first call, want %d", got, what, nodes)
		}
		if err := s.KeepAlive(t.Context()); err != nil {
			t.Fatalf("KeepAlive after %s: %v", what, err)
		}
		if lost := s.Lost(); lost != nil {
			t.Fatalf("Lost() after %s = %v, want nil", what, lost)
		}
	}
	if h, err := b.Holder(t.Context(), "job"); err != nil || h.ID != "holder" || h.Token != tok {
		t.Fatalf("Holder = %+v, %v; want holder, %d", h, err, tok)
	}
	got, err := b.Members(t.Context(), "group")
	if err != nil || len(got) != 1 || got[0].ID != "Register" {
		t.Fatalf("Candidates = %+v, %v; want the one registered", got, err)
	}
}

// TestConcurrentFirstAcquires: first Acquires of one session at once all
// succeed, on one session node, and Close leaves nothing of the session.
func TestConcurrentFirstAcquires(t *testing.T) {
	const n = 16
	conn := dial(t, server(t).Addr(), queueTimeout)
	b := newBackend(t, conn, queueTimeout)
	backendtest.Acquire(t, backendtest.Open(t, b, "first", queueTimeout), "warm") // the roots exist
	s, err := b.Open(t.Context(), "many", queueTimeout)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	names := backendtest.Names("job-", n)
	toks := backendtest.AcquireAtOnce(t, s, names)
	if got := sessionNodes(t, conn); len(got) != 2 {
		t.Fatalf("session nodes: %q, want two", got)
	}
	if err := s.KeepAlive(t.Context()); err != nil {
		t.Fatalf("KeepAlive: %v", err)
	}
	if lost := s.Lost(); lost != nil {
		t.Fatalf("Lost() = %v, want nil", lost)
	}
	backendtest.HeldBy(t, b, "many", names, toks)
	if err := s.Close(t.Context()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got := sessionNodes(t, conn); len(got) != 1 {
		t.Fatalf("session nodes after Close: %q, want only the first session's", got)
	}
}

// TestCloseOfAnUnusedSession: a session closed before any call makes no
// request, and its calls after Close are ErrSessionClosed.
func TestCloseOfAnUnusedSession(t *testing.T) {
	b := ownBackend(t)
	calls := zookeeper.CountCalls(b)
	s, err := b.Open(t.Context(), "idle", queueTimeout)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if err := s.Close(t.Context()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("Open and Close made %d requests, want none", n)
	}
	if _, err := s.Acquire(t.Context(), "job", 0); !errors.Is(err, backends.ErrSessionClosed) {
		t.Fatalf("Acquire after Close: %v, want ErrSessionClosed", err)
	}
}

// TestOpenOnADoneContext: Open makes no request, but still refuses a
// context that is done, as every call does.
func TestOpenOnADoneContext(t *testing.T) {
	b := ownBackend(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := b.Open(ctx, "late", queueTimeout); !errors.Is(err, backends.ErrUnavailable) {
		t.Fatalf("Open on a done context: %v, want ErrUnavailable", err)
	}
}

// TestFirstCallAfterTheSessionsNodeWentAway: a session whose first call
// finds root/sessions deleted (an operator's cleanup) creates it again
// rather than failing.
func TestFirstCallAfterTheSessionsNodeWentAway(t *testing.T) {
	conn := dial(t, server(t).Addr(), queueTimeout)
	b := newBackend(t, conn, queueTimeout)
	s := backendtest.Open(t, b, "a", queueTimeout)
	backendtest.Acquire(t, s, "job")
	if err := s.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := conn.Delete(root(t)+"/sessions", -1); err != nil {
		t.Fatalf("delete root/sessions: %v", err)
	}
	again := backendtest.Open(t, b, "b", queueTimeout)
	backendtest.Acquire(t, again, "job")
	if got := sessionNodes(t, conn); len(got) != 1 {
		t.Fatalf("session nodes: %q, want one", got)
	}
}

// sessionNodes lists the session nodes of the test's root.
func sessionNodes(t *testing.T, conn *zk.Conn) []string {
	t.Helper()
	kids, _, err := conn.Children(root(t) + "/sessions")
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		t.Fatalf("list the session nodes: %v", err)
	}
	return kids
}
