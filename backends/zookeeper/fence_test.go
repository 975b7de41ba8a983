package zookeeper_test

import (
	"errors"
	"fmt"
	"path"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/zookeeper"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/testserver"
)

// createAll creates the persistent node p and its missing ancestors.
func createAll(t *testing.T, conn *zk.Conn, p string) {
	t.Helper()
	if p == "/" {
		return
	}
	_, err := conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll))
	if errors.Is(err, zk.ErrNoNode) {
		createAll(t, conn, path.Dir(p))
		_, err = conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll))
	}
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		t.Fatalf("create %s: %v", p, err)
	}
}

// fenceEnv is a Backend, two sessions on it and a data node to write.
type fenceEnv struct {
	conn *zk.Conn
	b    *zookeeper.Backend
	a, c backends.Session
	data string
}

func newFenceEnv(t *testing.T) fenceEnv {
	const timeout = 4 * time.Second
	conn := dial(t, server(t).Addr(), timeout)
	e := fenceEnv{conn: conn, b: newBackend(t, conn, timeout), data: root(t) + "-data"}
	for _, s := range []*backends.Session{&e.a, &e.c} {
		var err error
		if *s, err = e.b.Open(t.Context(), "x", 2*time.Second); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = (*s).Close(t.Context()) })
	}
	createAll(t, conn, e.data)
	return e
}

// set writes v to the data node under the fence of name and token.
func (e fenceEnv) set(t *testing.T, name string, tok events.Token, v string) error {
	t.Helper()
	_, err := e.b.Fence(t.Context(), name, tok, e.setData(v))
	return err
}

func (e fenceEnv) setData(v string) *zk.SetDataRequest {
	return &zk.SetDataRequest{Path: e.data, Data: []byte(v), Version: -1}
}

// want fails the test unless the data node holds v.
func (e fenceEnv) want(t *testing.T, v string) {
	t.Helper()
	data, _, err := e.conn.Get(e.data)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != v {
		t.Fatalf("data node holds %q, want %q", data, v)
	}
}

// TestFenceRefusesHold: a lock released with a hold passes no
// fence, neither under the released token nor under one a waiter was
// queued for, until the hold ends and the waiter is granted.
func TestFenceRefusesHold(t *testing.T) {
	e := newFenceEnv(t)
	ctx := t.Context()
	t1, err := e.a.Acquire(ctx, "h", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.set(t, "h", t1, "a"); err != nil {
		t.Fatalf("holder's write: %v", err)
	}
	if _, err := e.c.Acquire(ctx, "h", 0); !errors.Is(err, backends.ErrHeld) {
		t.Fatalf("waiter's Acquire: %v, want ErrHeld", err)
	}
	if err := e.a.Release(ctx, "h", t1, 500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := e.set(t, "h", t1, "stale"); !errors.Is(err, backends.ErrNotHeld) {
		t.Fatalf("write under the token released with a hold: %v, want ErrNotHeld", err)
	}
	e.want(t, "a")
	var t2 events.Token
	// The hold ends on the server's clock and nothing signals it: the
	// waiter asks until it gets the lock.
	testserver.EventuallyNil(t, 5*time.Second, func() error {
		t2, err = e.c.Acquire(ctx, "h", 0)
		if err != nil && !errors.Is(err, backends.ErrHeld) {
			t.Fatalf("waiter's Acquire after the hold: %v", err)
		}
		if err != nil {
			return fmt.Errorf("waiter's Acquire after the hold: %w", err)
		}
		return nil
	})
	if err := e.set(t, "h", t1, "stale"); !errors.Is(err, backends.ErrNotHeld) {
		t.Fatalf("write under the old token after the hold: %v, want ErrNotHeld", err)
	}
	if err := e.set(t, "h", t2, "c"); err != nil {
		t.Fatalf("new holder's write: %v", err)
	}
	e.want(t, "c")
}

// TestFenceRefusesTermEndedAfterFence: a term that ends between
// the fence's read and the transaction (its node deleted, as a release
// or a take-over does) fails the transaction's check: ErrNotHeld, and
// nothing applied.
func TestFenceRefusesTermEndedAfterFence(t *testing.T) {
	e := newFenceEnv(t)
	ctx := t.Context()
	tok, err := e.a.Acquire(ctx, "r", 0)
	if err != nil {
		t.Fatal(err)
	}
	deleteNode := func(p string) {
		if err := e.conn.Delete(p, -1); err != nil {
			t.Errorf("delete %s: %v", p, err)
		}
	}
	_, err = zookeeper.FenceThen(ctx, e.b, "r", tok, deleteNode, e.setData("stale"))
	if !errors.Is(err, backends.ErrNotHeld) {
		t.Fatalf("Fence: %v, want ErrNotHeld", err)
	}
	e.want(t, "")
}

// TestFenceReportsOpErrors: an op of the caller's that fails
// returns zk's error (not ErrNotHeld), with the responses, and applies
// nothing; an op of a type Multi does not take, and token 0, are refused
// before anything is sent.
func TestFenceReportsOpErrors(t *testing.T) {
	e := newFenceEnv(t)
	ctx := t.Context()
	tok, err := e.a.Acquire(ctx, "o", 0)
	if err != nil {
		t.Fatal(err)
	}
	exists := &zk.CreateRequest{Path: e.data, Acl: zk.WorldACL(zk.PermAll)}
	res, err := e.b.Fence(ctx, "o", tok, e.setData("applied?"), exists)
	if !errors.Is(err, zk.ErrNodeExists) || errors.Is(err, backends.ErrNotHeld) {
		t.Fatalf("Fence with a create of an existing node: %v, want zk.ErrNodeExists", err)
	}
	if len(res) != 2 || !errors.Is(res[1].Error, zk.ErrNodeExists) {
		t.Fatalf("responses %+v, want the second op's error", res)
	}
	e.want(t, "")
	if _, err := e.b.Fence(ctx, "o", tok, struct{ Path string }{e.data}); !errors.Is(err, backends.ErrInvalid) {
		t.Fatalf("Fence with a read: %v, want ErrInvalid", err)
	}
	if err := e.set(t, "o", 0, "zero"); !errors.Is(err, backends.ErrNotHeld) {
		t.Fatalf("token 0: %v, want ErrNotHeld", err)
	}
	if err := e.set(t, "o", tok, "made"); err != nil {
		t.Fatalf("holder's write: %v", err)
	}
	e.want(t, "made")
}
