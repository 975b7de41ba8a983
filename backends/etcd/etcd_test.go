package etcd_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/backendtest"
	"github.com/hustings/hustings/backends/etcd"
	"github.com/hustings/hustings/backends/etcd/etcdtest"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/faultlink"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, faultlink.KnownLeaks()...)
}

// TestContract runs the contract suite against an embedded etcd server.
func TestContract(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	backendtest.Run(t, backendtest.Harness{
		New:    func(t *testing.T) backends.Backend { return newBackend(t, cli) },
		TTL:    2 * time.Second,
		Delete: deleteLock(cli),
		Fence:  fencedWrite(cli),
	})
}

// fencedWrite returns a Harness.Fence that puts a key in the lock's
// store in a transaction conditioned on Backend.Fence.
func fencedWrite(cli *clientv3.Client) func(ctx context.Context, b backends.Backend, name string, token events.Token) error {
	return func(ctx context.Context, b backends.Backend, name string, token events.Token) error {
		resp, err := cli.Txn(ctx).If(b.(*etcd.Backend).Fence(name, token)).
			Then(clientv3.OpPut("fenced/"+name, strconv.FormatUint(uint64(token), 10))).Commit()
		switch {
		case err != nil:
			return err
		case !resp.Succeeded:
			return fmt.Errorf("%w: %q under token %d", backends.ErrNotHeld, name, token)
		}
		return nil
	}
}

// deleteLock returns a Harness.Delete that deletes a lock's key with cli,
// as an operator would.
func deleteLock(cli *clientv3.Client) func(t *testing.T, b backends.Backend, name string) {
	return func(t *testing.T, b backends.Backend, name string) {
		t.Helper()
		resp, err := cli.Delete(t.Context(), etcd.LockKey(b.(*etcd.Backend), name))
		if err != nil || resp.Deleted != 1 {
			t.Fatalf("delete the key of %q: %+v, %v; want one key deleted", name, resp, err)
		}
	}
}

// TestGroups runs the group scenario of the contract suite (crashes and
// resignations among 8 candidates for 3 slots) against an embedded etcd
// server, in real time.
func TestGroups(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	backendtest.RunGroups(t, backendtest.Harness{
		New: func(t *testing.T) backends.Backend { return newBackend(t, cli) },
		TTL: time.Second,
	})
}

// newBackend returns a Backend on cli, failing the test on error.
func newBackend(t testing.TB, cli *clientv3.Client, opts ...etcd.Option) *etcd.Backend {
	t.Helper()
	b, err := etcd.New(cli, opts...)
	if err != nil {
		t.Fatalf("etcd.New: %v", err)
	}
	return b
}

// open opens a session, closed when the test ends.
func open(t testing.TB, b backends.Backend, id string, ttl time.Duration) backends.Session {
	t.Helper()
	s, err := b.Open(t.Context(), id, ttl)
	if err != nil {
		t.Fatalf("Open(%q, %v): %v", id, ttl, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Close(ctx)
	})
	return s
}

// TestStorm starts a storm of campaigns on one shared session at once
// against an embedded etcd server (see backendtest.RunStorm). 2,000, not
// RunStorm's 10,000: every renewal confirms every lock (79 transactions
// of 128 compares at 10,000), and the embedded server runs in this
// race-instrumented process; beside two CPU burners that outlasted the
// 3 s TTL. bench holds 100,000 on a server built without the detector.
func TestStorm(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	backendtest.RunStorm(t, backendtest.Harness{
		New: func(t *testing.T) backends.Backend { return newBackend(t, cli) },
		TTL: time.Second,
	}, 2_000)
}
