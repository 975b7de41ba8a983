package etcd_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/backendtest"
	"github.com/hustings/hustings/backends/etcd"
	"github.com/hustings/hustings/backends/etcd/etcdtest"
	"github.com/hustings/hustings/internal/testserver"
)

func TestNewNilClient(t *testing.T) {
	if _, err := etcd.New(nil); !errors.Is(err, backends.ErrInvalid) {
		t.Fatalf("New(nil): %v, want ErrInvalid", err)
	}
}

// TestNewRejectsPrefixWithoutSlash: "/app" would share keys with "/app2/".
func TestNewRejectsPrefixWithoutSlash(t *testing.T) {
	cli, err := etcdtest.NewClient("127.0.0.1:1") // never dialled
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	for _, p := range []string{"/app", "", "app"} {
		if _, err := etcd.New(cli, etcd.WithPrefix(p)); !errors.Is(err, backends.ErrInvalid) || !strings.Contains(err.Error(), `must end with "/"`) {
			t.Errorf("New with prefix %q: %v, want ErrInvalid", p, err)
		}
	}
	if _, err := etcd.New(cli, etcd.WithPrefix("/app/")); err != nil {
		t.Errorf("New with prefix /app/: %v", err)
	}
}

// TestClosedClient: see backendtest.ClosedClient.
func TestClosedClient(t *testing.T) {
	srv := etcdtest.Start(t)
	cli, err := etcdtest.NewClient(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	cli.Close()
	backendtest.ClosedClient(t, newBackend(t, cli))
}

// leaseOf returns the ID of the only lease on the server, failing the
// test unless there is exactly one.
func leaseOf(t *testing.T, cli *clientv3.Client) clientv3.LeaseID {
	t.Helper()
	resp, err := cli.Leases(t.Context())
	if err != nil {
		t.Fatalf("Leases: %v", err)
	}
	if len(resp.Leases) != 1 {
		t.Fatalf("%d leases on the server, want 1", len(resp.Leases))
	}
	return resp.Leases[0].ID
}

// TestTTLRoundedUp: the session's lease is the TTL rounded up to whole
// seconds, and the server holds it at least that long.
func TestTTLRoundedUp(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	b := newBackend(t, cli)
	open(t, b, "a", 1500*time.Millisecond)
	ttl, err := cli.TimeToLive(t.Context(), leaseOf(t, cli))
	if err != nil {
		t.Fatalf("TimeToLive: %v", err)
	}
	if ttl.GrantedTTL != 2 {
		t.Fatalf("granted TTL = %ds, want 2s for a TTL of 1.5s", ttl.GrantedTTL)
	}
}

// shortLease is a Lease whose Grant reports one second less than asked,
// as a server with a lower maximum would.
type shortLease struct {
	clientv3.Lease
}

func (l shortLease) Grant(ctx context.Context, ttl int64) (*clientv3.LeaseGrantResponse, error) {
	resp, err := l.Lease.Grant(ctx, ttl)
	if err == nil {
		resp.TTL--
	}
	return resp, err
}

// TestShortGrantIsInvalid: a lease shorter than asked would let the lock
// go before the campaign's deadline, so Open refuses it; so does a TTL
// longer than etcd's maximum.
func TestShortGrantIsInvalid(t *testing.T) {
	srv := etcdtest.Start(t)
	cli := srv.Client(t)
	b := newBackend(t, cli)
	if _, err := b.Open(t.Context(), "a", 9_100_000_000*time.Second); !errors.Is(err, backends.ErrInvalid) {
		t.Fatalf("Open with a TTL above etcd's maximum: %v, want ErrInvalid", err)
	}
	short := srv.Client(t)
	short.Lease = shortLease{short.Lease}
	_, err := newBackend(t, short).Open(t.Context(), "a", 3*time.Second)
	if !errors.Is(err, backends.ErrInvalid) {
		t.Fatalf("Open granted a shorter lease: %v, want ErrInvalid", err)
	}
	if resp, err := cli.Leases(t.Context()); err != nil || len(resp.Leases) != 0 {
		t.Fatalf("leases left after refused grants: %v, %v; want none", resp, err)
	}
}

// TestZombieCannotAcquire (etcd-io/etcd#19597): once its session's lease
// is gone, a candidate can take no lock, free or just released by its
// predecessor; it learns that its session is lost, not that the lock is
// held.
func TestZombieCannotAcquire(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	b := newBackend(t, cli)
	zombie := open(t, b, "zombie", time.Minute)
	if _, err := cli.Revoke(t.Context(), leaseOf(t, cli)); err != nil {
		t.Fatalf("Revoke out of band: %v", err)
	}
	pred := open(t, b, "pred", time.Minute)
	held := "held"
	tok := backendtest.Acquire(t, pred, held)
	for _, lease := range []time.Duration{0, time.Minute} {
		_, err := zombie.Acquire(t.Context(), "free", lease)
		wantLost(t, "Acquire of a free lock with a lease of "+lease.String(), err)
		_, err = zombie.Acquire(t.Context(), held, lease)
		wantLost(t, "Acquire of a held lock", err)
	}
	if err := pred.Release(t.Context(), held, tok, 0); err != nil {
		t.Fatalf("predecessor's Release: %v", err)
	}
	_, err := zombie.Acquire(t.Context(), held, 0)
	wantLost(t, "Acquire of a lock its predecessor released", err)
	for _, name := range []string{"free", held} {
		if h, err := b.Holder(t.Context(), name); err != nil || h.ID != "" {
			t.Fatalf("Holder(%q) = %+v, %v; want free", name, h, err)
		}
	}
	if err := zombie.KeepAlive(t.Context()); !errors.Is(err, backends.ErrSessionLost) {
		t.Fatalf("KeepAlive: %v, want ErrSessionLost", err)
	}
	err = zombie.Release(t.Context(), held, tok, 0)
	if !errors.Is(err, backends.ErrNotHeld) || !errors.Is(err, backends.ErrSessionLost) {
		t.Fatalf("Release: %v, want ErrNotHeld and ErrSessionLost", err)
	}
	if err := zombie.Close(t.Context()); err != nil {
		t.Fatalf("Close of a lost session: %v", err)
	}
}

// TestZombieAfterExpiry: the same when the lease expired on the server
// rather than being revoked.
func TestZombieAfterExpiry(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	b := newBackend(t, cli)
	zombie := open(t, b, "zombie", time.Second)
	id := leaseOf(t, cli)
	testserver.Eventually(t, "the server expired and revoked the 1s lease", 15*time.Second, func() bool {
		ttl, err := cli.TimeToLive(t.Context(), id)
		return err == nil && ttl.TTL == -1
	})
	_, err := zombie.Acquire(t.Context(), "job", 0)
	wantLost(t, "Acquire after expiry", err)
	if h, err := b.Holder(t.Context(), "job"); err != nil || h.ID != "" {
		t.Fatalf("Holder = %+v, %v; want free", h, err)
	}
}

func wantLost(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, backends.ErrSessionLost) {
		t.Fatalf("%s by a lost session: %v, want ErrSessionLost", what, err)
	}
	if errors.Is(err, backends.ErrHeld) {
		t.Fatalf("%s by a lost session: %v also matches ErrHeld", what, err)
	}
}

// TestRetriedReleaseKeepsNewerHolder (etcd-io/etcd#22082): a Release
// retried after the lock changed hands, even back to the same session,
// deletes nothing.
func TestRetriedReleaseKeepsNewerHolder(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	b := newBackend(t, cli)
	a, other := open(t, b, "a", time.Minute), open(t, b, "b", time.Minute)
	first := backendtest.Acquire(t, a, "job")
	if err := a.Release(t.Context(), "job", first, 0); err != nil {
		t.Fatalf("Release: %v", err)
	}
	for _, next := range []backends.Session{other, a} {
		tok := backendtest.Acquire(t, next, "job")
		if err := a.Release(t.Context(), "job", first, 0); !errors.Is(err, backends.ErrNotHeld) {
			t.Fatalf("retried Release while %s holds it: %v, want ErrNotHeld", next.ID(), err)
		}
		if err := a.Release(t.Context(), "job", first, time.Minute); !errors.Is(err, backends.ErrNotHeld) {
			t.Fatalf("retried Release with a hold while %s holds it: %v, want ErrNotHeld", next.ID(), err)
		}
		if h, err := b.Holder(t.Context(), "job"); err != nil || h.ID != next.ID() || h.Token != tok {
			t.Fatalf("Holder = %+v, %v; want %s, %d", h, err, next.ID(), tok)
		}
		if err := next.Release(t.Context(), "job", tok, 0); err != nil {
			t.Fatalf("%s: Release: %v", next.ID(), err)
		}
	}
}

// TestPrefixesAreApart: backends with different prefixes on one cluster
// do not see each other's locks, and keep their keys under their prefix.
func TestPrefixesAreApart(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	one := newBackend(t, cli, etcd.WithPrefix("/one/"))
	two := newBackend(t, cli, etcd.WithPrefix("/two/"))
	backendtest.Acquire(t, open(t, one, "a", time.Minute), "job")
	backendtest.Acquire(t, open(t, two, "b", time.Minute), "job")
	resp, err := cli.Get(t.Context(), "", clientv3.WithFromKey(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range resp.Kvs {
		if k := string(kv.Key); k[:5] != "/one/" && k[:5] != "/two/" {
			t.Errorf("key %q outside the prefixes", k)
		}
	}
}
