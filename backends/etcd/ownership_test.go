package etcd_test

import (
	"context"
	"errors"
	"maps"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/backendtest"
	"github.com/hustings/hustings/backends/etcd"
	"github.com/hustings/hustings/backends/etcd/etcdtest"
	"github.com/hustings/hustings/events"
)

// TestLockTakenBehindItsBackIsLost: however a lock is taken from its
// session while the session lives (its key deleted, then maybe taken by a
// rival; its key rebound to no lease; its guard lease revoked), the
// session's next KeepAlive succeeds and reports that lock in Lost, and not
// the session's other lock, taken the same way: whether KeepAlive reads
// the locks or confirms them with the session's loss watch.
func TestLockTakenBehindItsBackIsLost(t *testing.T) {
	for _, watched := range []bool{false, true} {
		t.Run(map[bool]string{false: "Read", true: "Watched"}[watched], func(t *testing.T) {
			testLockTakenBehindItsBack(t, watched)
		})
	}
}

func testLockTakenBehindItsBack(t *testing.T, watched bool) {
	cli := etcdtest.Start(t).Client(t)
	b := newBackend(t, cli)
	rival := open(t, b, "rival", time.Minute)
	for _, tc := range []struct {
		name   string
		lease  time.Duration
		take   func(t *testing.T, key string)
		holder string // who holds the lock afterwards; "" if free
	}{
		{"Deleted", 0, func(t *testing.T, key string) { del(t, cli, key) }, ""},
		{"DeletedThenTakenByRival", 0, func(t *testing.T, key string) {
			del(t, cli, key)
			backendtest.Acquire(t, rival, "DeletedThenTakenByRival")
		}, "rival"},
		{"Unbound", 0, func(t *testing.T, key string) { unbind(t, cli, key) }, "a"},
		{"GuardRevoked", time.Minute, func(t *testing.T, key string) { revokeGuard(t, cli, key) }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := open(t, b, "a", time.Minute)
			if watched {
				a.Losses()
			}
			tok, err := a.Acquire(t.Context(), tc.name, tc.lease)
			if err != nil {
				t.Fatalf("Acquire: %v", err)
			}
			if _, err := a.Acquire(t.Context(), tc.name+"-kept", tc.lease); err != nil {
				t.Fatalf("Acquire of the lock kept: %v", err)
			}
			keepAlive(t, a)
			if lost := a.Lost(); lost != nil {
				t.Fatalf("Lost() = %v before anything was taken, want nil", lost)
			}

			tc.take(t, etcd.LockKey(b, tc.name))
			keepAlive(t, a)
			if want := map[string]events.Token{tc.name: tok}; !maps.Equal(a.Lost(), want) {
				t.Fatalf("Lost() = %v, want %v", a.Lost(), want)
			}
			if h, err := b.Holder(t.Context(), tc.name); err != nil || h.ID != tc.holder {
				t.Fatalf("Holder = %+v, %v; want %q", h, err, tc.holder)
			}
		})
	}
}

// TestRevokedSessionIsLostNotItsLocks: when the session's lease is revoked
// from outside, KeepAlive reports the session lost, and Lost reports none
// of its locks, which went with the session.
func TestRevokedSessionIsLostNotItsLocks(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	b := newBackend(t, cli)
	a := open(t, b, "a", time.Minute)
	backendtest.Acquire(t, a, "one")
	backendtest.Acquire(t, a, "two")
	if _, err := cli.Revoke(t.Context(), leaseOf(t, cli)); err != nil {
		t.Fatalf("Revoke out of band: %v", err)
	}
	if err := a.KeepAlive(t.Context()); !errors.Is(err, backends.ErrSessionLost) {
		t.Fatalf("KeepAlive: %v, want ErrSessionLost", err)
	}
	if lost := a.Lost(); lost != nil {
		t.Fatalf("Lost() = %v, want nil: the session is lost, not some of its locks", lost)
	}
}

// TestUnconfirmedKeepAliveFails: a KeepAlive whose lease is renewed but
// whose locks cannot be confirmed fails as unavailable, and reports no
// lock lost; once the server answers again, it succeeds.
func TestUnconfirmedKeepAliveFails(t *testing.T) {
	var refuse atomic.Bool
	refuseTxn := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoke grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if refuse.Load() && method == "/etcdserverpb.KV/Txn" {
			return status.Error(codes.Internal, "test: transaction refused")
		}
		return invoke(ctx, method, req, reply, cc, opts...)
	}
	srv := etcdtest.Start(t)
	b := newBackend(t, srv.Client(t, grpc.WithChainUnaryInterceptor(refuseTxn)))
	a := open(t, b, "a", time.Minute)
	backendtest.Acquire(t, a, "job")

	refuse.Store(true)
	if err := a.KeepAlive(t.Context()); !errors.Is(err, backends.ErrUnavailable) {
		t.Fatalf("KeepAlive with its confirmation refused: %v, want ErrUnavailable", err)
	}
	if lost := a.Lost(); lost != nil {
		t.Fatalf("Lost() = %v after a failed confirmation, want nil", lost)
	}
	refuse.Store(false)
	keepAlive(t, a)
	if lost := a.Lost(); lost != nil {
		t.Fatalf("Lost() = %v, want nil", lost)
	}
}

// keepAlive renews s, failing the test on error.
func keepAlive(t *testing.T, s backends.Session) {
	t.Helper()
	if err := s.KeepAlive(t.Context()); err != nil {
		t.Fatalf("%s: KeepAlive: %v", s.ID(), err)
	}
}

// del deletes key, which must exist.
func del(t *testing.T, cli *clientv3.Client, key string) {
	t.Helper()
	if resp, err := cli.Delete(t.Context(), key); err != nil || resp.Deleted != 1 {
		t.Fatalf("Delete(%q) = %+v, %v; want one key deleted", key, resp, err)
	}
}

// unbind puts key's value back bound to no lease, as an operator's put
// does: the key would outlive its session.
func unbind(t *testing.T, cli *clientv3.Client, key string) {
	t.Helper()
	resp, err := cli.Get(t.Context(), key)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("Get(%q) = %+v, %v", key, resp, err)
	}
	if _, err := cli.Put(t.Context(), key, string(resp.Kvs[0].Value)); err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
}

// revokeGuard revokes the lease of key's guard key (that of a lock
// acquired with a lease), which etcd deletes with it.
func revokeGuard(t *testing.T, cli *clientv3.Client, key string) {
	t.Helper()
	resp, err := cli.Get(t.Context(), key+"\x00", clientv3.WithPrefix())
	if err != nil || len(resp.Kvs) != 1 || resp.Kvs[0].Lease == 0 {
		t.Fatalf("the guard key of %q: %+v, %v; want one, bound to a lease", key, resp, err)
	}
	if _, err := cli.Revoke(t.Context(), clientv3.LeaseID(resp.Kvs[0].Lease)); err != nil {
		t.Fatalf("Revoke the guard lease: %v", err)
	}
}
