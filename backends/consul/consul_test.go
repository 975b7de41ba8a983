package consul_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
	"go.uber.org/goleak"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/backendtest"
	"github.com/hustings/hustings/backends/consul"
	"github.com/hustings/hustings/backends/consul/consultest"
	"github.com/hustings/hustings/events"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// The idle connections of the tests' clients, which have no Close.
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"))
}

// client returns a new client of srv.
func client(t testing.TB, srv *consultest.Server) *api.Client {
	t.Helper()
	c, err := srv.Client()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// newBackend returns a Backend on a new client of srv.
func newBackend(t testing.TB, srv *consultest.Server, opts ...consul.Option) *consul.Backend {
	t.Helper()
	b, err := consul.New(client(t, srv), opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return b
}

// deleteLock deletes lock name's key behind its holder's back, as an
// operator's `consul kv delete` would.
func deleteLock(t *testing.T, c *api.Client, b backends.Backend, name string) {
	t.Helper()
	if _, err := c.KV().Delete(b.(*consul.Backend).LockKey(name), nil); err != nil {
		t.Fatalf("delete lock %q: %v", name, err)
	}
}

// fencedWrite writes a key under the lock's fence.
func fencedWrite(ctx context.Context, b backends.Backend, name string, token events.Token) error {
	_, err := b.(*consul.Backend).Fence(ctx, name, token, api.TxnOps{
		{KV: &api.KVTxnOp{Verb: api.KVSet, Key: "fenced/" + name, Value: []byte(name)}},
	})
	return err
}

func TestContract(t *testing.T) {
	srv := consultest.Start(t)
	c := client(t, srv)
	backendtest.Run(t, backendtest.Harness{
		New:    func(t *testing.T) backends.Backend { return newBackend(t, srv) },
		TTL:    time.Second,
		Delete: func(t *testing.T, b backends.Backend, name string) { deleteLock(t, c, b, name) },
		Fence:  fencedWrite,
	})
}

// TestGroups runs the group scenario of the contract suite against a
// real server, in real time.
func TestGroups(t *testing.T) {
	srv := consultest.Start(t)
	backendtest.RunGroups(t, backendtest.Harness{
		New: func(t *testing.T) backends.Backend { return newBackend(t, srv) },
		TTL: time.Second,
	})
}

func TestStorm(t *testing.T) {
	srv := consultest.Start(t)
	backendtest.RunStorm(t, backendtest.Harness{
		New: func(t *testing.T) backends.Backend { return newBackend(t, srv) },
		TTL: time.Second,
	}, 2_000)
}

func TestNewRejectsBadInput(t *testing.T) {
	c, err := api.NewClient(&api.Config{Address: "127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	var typedNil *api.Client
	tests := []struct {
		name string
		c    *api.Client
		opts []consul.Option
	}{
		{"nil client", nil, nil},
		{"typed nil client", typedNil, nil},
		{"empty prefix", c, []consul.Option{consul.WithPrefix("")}},
		{"prefix without a slash", c, []consul.Option{consul.WithPrefix("locks")}},
		{"prefix starting with a slash", c, []consul.Option{consul.WithPrefix("/locks/")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if b, err := consul.New(tt.c, tt.opts...); !errors.Is(err, backends.ErrInvalid) || b != nil {
				t.Fatalf("New = %v, %v; want ErrInvalid", b, err)
			}
		})
	}
}

// TestTTLOutOfServerRange: a TTL the server refuses (below its
// session_ttl_min, above 24 h) is ErrInvalid, never silently raised.
func TestTTLOutOfServerRange(t *testing.T) {
	srv := consultest.Start(t)
	b := newBackend(t, srv)
	for _, ttl := range []time.Duration{consultest.SessionTTLMin / 2, 25 * time.Hour} {
		if s, err := b.Open(t.Context(), "a", ttl); !errors.Is(err, backends.ErrInvalid) {
			t.Errorf("Open with TTL %v = %v, %v; want ErrInvalid", ttl, s, err)
		}
	}
}

// TestFenceOpInOwnTxn: FenceOp first in a transaction of the caller's own
// writes admits them while the term lasts, and makes Consul roll them
// back once it ended (released, then taken by another).
func TestFenceOpInOwnTxn(t *testing.T) {
	srv := consultest.Start(t)
	b := newBackend(t, srv)
	c := client(t, srv)
	a := backendtest.Open(t, b, "a", time.Second)
	tok := backendtest.Acquire(t, a, "job")
	write := func(v string) bool {
		t.Helper()
		ok, resp, _, err := c.Txn().Txn(api.TxnOps{
			b.FenceOp("job", tok),
			{KV: &api.KVTxnOp{Verb: api.KVSet, Key: "app/output", Value: []byte(v)}},
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !ok && (len(resp.Errors) != 1 || resp.Errors[0].OpIndex != 0) {
			t.Fatalf("rolled back for another reason than the fence: %+v", resp.Errors)
		}
		return ok
	}
	if !write("first") {
		t.Fatal("a write under the term's fence was refused")
	}
	if err := a.Release(t.Context(), "job", tok, 0); err != nil {
		t.Fatal(err)
	}
	o := backendtest.Open(t, b, "o", time.Second)
	if next := backendtest.Acquire(t, o, "job"); next <= tok {
		t.Fatalf("next token %d, want > %d", next, tok)
	}
	if write("stale") {
		t.Fatal("a write under an ended term's fence was admitted")
	}
	kv, _, err := c.KV().Get("app/output", nil)
	if err != nil || kv == nil || string(kv.Value) != "first" {
		t.Fatalf("app/output = %v, %v; want the first write only", kv, err)
	}
}

// TestSessionSettings: the Consul session an Open makes has the Open's
// TTL, behavior delete, no health check, and no lock-delay (Consul's
// default of 15 s would hold a crashed holder's locks from everyone).
func TestSessionSettings(t *testing.T) {
	srv := consultest.Start(t)
	b := newBackend(t, srv)
	backendtest.Open(t, b, "a", 1500*time.Millisecond)
	ss, _, err := client(t, srv).Session().List(nil)
	if err != nil || len(ss) != 1 {
		t.Fatalf("sessions: %v, %v; want one", ss, err)
	}
	s := ss[0]
	if s.TTL != "1.5s" || s.Behavior != api.SessionBehaviorDelete || s.LockDelay != 0 || len(s.NodeChecks)+len(s.ServiceChecks)+len(s.Checks) != 0 {
		t.Fatalf("session %+v; want TTL 1.5s, behavior delete, lock-delay 0, no checks", s)
	}
}
