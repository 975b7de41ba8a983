package etcd_test

import (
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/backendtest"
	"github.com/hustings/hustings/backends/etcd"
	"github.com/hustings/hustings/backends/etcd/etcdtest"
)

// TestOneShotIsThreeWrites: a session opened to take one lock and closed
// (campaign.RunIfLeader without a session) sends a lease grant, one
// transaction and a lease revoke: Open writes nothing to the store, and
// the Acquire puts the session key with the lock.
func TestOneShotIsThreeWrites(t *testing.T) {
	srv := etcdtest.Start(t)
	counts := &requests{n: make(map[string]int)}
	cli := srv.Client(t, counts.dialOptions()...)
	b := newBackend(t, cli)
	before, rev := counts.snapshot(), revision(t, cli)
	s, err := b.Open(t.Context(), "once", time.Minute)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if got := revision(t, cli); got != rev {
		t.Errorf("Open moved the store's revision from %d to %d, want no write", rev, got)
	}
	got := counts.since(before)
	delete(got, "/etcdserverpb.KV/Range") // the revision reads
	if want := map[string]int{"/etcdserverpb.Lease/LeaseGrant": 1}; !maps.Equal(got, want) {
		t.Errorf("Open sent %v, want %v", got, want)
	}
	before = counts.snapshot()
	tok := backendtest.Acquire(t, s, "job")
	if err := s.Close(t.Context()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	want := map[string]int{"/etcdserverpb.KV/Txn": 1, "/etcdserverpb.Lease/LeaseRevoke": 1}
	if got := counts.since(before); !maps.Equal(got, want) {
		t.Errorf("Acquire and Close sent %v, want %v", got, want)
	}
	if h, err := b.Holder(t.Context(), "job"); err != nil || h.ID != "" {
		t.Fatalf("Holder after Close = %+v, %v; want free (token was %d)", h, err, tok)
	}
}

// TestFirstAcquireOpensTheSession: a session's first Acquire puts the
// session key, bound to its lease, in the transaction that takes the
// lock (same revision), and the lock is the session's like any other:
// reported by Holder, refused to a rival, confirmed by KeepAlive, fenced,
// released. Later calls no longer write the session key. A first Acquire
// that finds the lock held opens the session too.
func TestFirstAcquireOpensTheSession(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	b := newBackend(t, cli)
	a := open(t, b, "a", time.Minute)
	tok := backendtest.Acquire(t, a, "job")
	key := sessionKV(t, cli, b, "a")
	if key.CreateRevision != int64(tok) {
		t.Errorf("session key created at revision %d, want %d, the lock's token", key.CreateRevision, tok)
	}
	if h, err := b.Holder(t.Context(), "job"); err != nil || h.ID != "a" || h.Token != tok {
		t.Fatalf("Holder = %+v, %v; want a, %d", h, err, tok)
	}
	rival := open(t, b, "rival", time.Minute)
	if _, err := rival.Acquire(t.Context(), "job", 0); !errors.Is(err, backends.ErrHeld) {
		t.Fatalf("rival's first Acquire: %v, want ErrHeld", err)
	}
	if v := sessionKV(t, cli, b, "rival").Version; v != 1 {
		t.Errorf("rival's session key at version %d after a contended first Acquire, want 1", v)
	}
	keepAlive(t, a)
	if lost := a.Lost(); lost != nil {
		t.Fatalf("Lost() = %v, want nil", lost)
	}
	if err := fencedWrite(cli)(t.Context(), b, "job", tok); err != nil {
		t.Fatalf("fenced write under the first token: %v", err)
	}
	if err := a.Release(t.Context(), "job", tok, 0); err != nil {
		t.Fatalf("Release: %v", err)
	}
	next := backendtest.Acquire(t, a, "job")
	if next <= tok {
		t.Fatalf("second token %d, want above %d", next, tok)
	}
	if got := sessionKV(t, cli, b, "a"); got.Version != 1 || got.CreateRevision != int64(tok) {
		t.Errorf("session key at version %d, created at %d after later calls; want 1, %d: put once", got.Version, got.CreateRevision, tok)
	}
}

// TestConcurrentFirstAcquires: first Acquires of one session at once all
// put the session key; the key keeps the first one's create revision, and
// every lock is held, confirmed, and freed by Close.
func TestConcurrentFirstAcquires(t *testing.T) {
	const n = 16
	cli := etcdtest.Start(t).Client(t)
	b := newBackend(t, cli)
	s, err := b.Open(t.Context(), "many", time.Minute)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	names := backendtest.Names("job-", n)
	toks := backendtest.AcquireAtOnce(t, s, names)
	if key := sessionKV(t, cli, b, "many"); key.CreateRevision != int64(slices.Min(toks)) {
		t.Errorf("session key created at revision %d, want %d, the first token", key.CreateRevision, slices.Min(toks))
	}
	keepAlive(t, s)
	if lost := s.Lost(); lost != nil {
		t.Fatalf("Lost() = %v, want nil", lost)
	}
	backendtest.HeldBy(t, b, "many", names, toks)
	if err := s.Close(t.Context()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	resp, err := cli.Get(t.Context(), etcd.DefaultPrefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || resp.Count != 0 {
		t.Fatalf("keys left after Close: %v, %v; want none", resp.Count, err)
	}
}

// TestLostBeforeFirstCall: a session whose lease is gone before its first
// call never puts its key: its Acquires report the session lost, its
// Release ErrNotHeld and ErrSessionLost, and no key of it is left.
func TestLostBeforeFirstCall(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	b := newBackend(t, cli)
	s := open(t, b, "zombie", time.Minute)
	lease := leaseOf(t, cli)
	if _, err := cli.Revoke(t.Context(), lease); err != nil {
		t.Fatalf("Revoke out of band: %v", err)
	}
	holder := open(t, b, "holder", time.Minute)
	backendtest.Acquire(t, holder, "held")
	for _, name := range []string{"free", "held"} {
		_, err := s.Acquire(t.Context(), name, 0)
		wantLost(t, "Acquire of "+name, err)
	}
	err := s.Release(t.Context(), "held", 1, 0)
	if !errors.Is(err, backends.ErrNotHeld) || !errors.Is(err, backends.ErrSessionLost) {
		t.Fatalf("Release: %v, want ErrNotHeld and ErrSessionLost", err)
	}
	resp, err := cli.Get(t.Context(), etcd.SessionKey(b, lease))
	if err != nil || len(resp.Kvs) != 0 {
		t.Fatalf("the lost session's key: %+v, %v; want none", resp.Kvs, err)
	}
	if err := s.Close(t.Context()); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// TestReleaseBeforeFirstAcquire: a Release by a session that never took a
// lock is ErrNotHeld, not a lost session.
func TestReleaseBeforeFirstAcquire(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	b := newBackend(t, cli)
	s := open(t, b, "a", time.Minute)
	err := s.Release(t.Context(), "job", 1, 0)
	if !errors.Is(err, backends.ErrNotHeld) || errors.Is(err, backends.ErrSessionLost) {
		t.Fatalf("Release: %v, want ErrNotHeld and not ErrSessionLost", err)
	}
	backendtest.Acquire(t, s, "job") // the session lives on
}

// revision returns the store's revision.
func revision(t *testing.T, cli *clientv3.Client) int64 {
	t.Helper()
	resp, err := cli.Get(t.Context(), "revision", clientv3.WithCountOnly())
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	return resp.Header.Revision
}

// sessionKV returns the session key of the only session of candidate id
// in b (of the default prefix), failing the test unless there is exactly
// one, bound to its lease.
func sessionKV(t *testing.T, cli *clientv3.Client, b *etcd.Backend, id string) *mvccpb.KeyValue {
	t.Helper()
	resp, err := cli.Get(t.Context(), etcd.DefaultPrefix+"session/", clientv3.WithPrefix())
	if err != nil {
		t.Fatalf("Get session keys: %v", err)
	}
	var found []*mvccpb.KeyValue
	for _, kv := range resp.Kvs {
		if string(kv.Value) == id {
			found = append(found, kv)
		}
	}
	if len(found) != 1 || found[0].Lease == 0 || string(found[0].Key) != etcd.SessionKey(b, clientv3.LeaseID(found[0].Lease)) {
		t.Fatalf("session keys of %s: %v; want one, bound to its lease", id, found)
	}
	return found[0]
}
