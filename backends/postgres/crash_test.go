package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/postgres"
	"github.com/hustings/hustings/backends/postgres/pgtest"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/testserver"
)

// answered retries f while the server is unreachable (a pool's
// connections broken by a restart), failing the test after 30 s, and
// returns f's first other result.
func answered(t *testing.T, f func() error) error {
	t.Helper()
	var err error
	testserver.EventuallyNil(t, 30*time.Second, func() error {
		if err = f(); errors.Is(err, backends.ErrUnavailable) {
			return err
		}
		return nil
	})
	return err
}

// TestACrashEndsNoTermEarly: the locks table is UNLOGGED, so a crash of
// the server empties it; the holder of a lock may still believe it leads
// until its next renewal, so no other session takes the lock until every
// session alive at the crash has renewed (and its renewal reported the
// lock lost) or expired. A hold outlives the crash, and the tokens after
// it are above those before even if the sequence came back behind them.
func TestACrashEndsNoTermEarly(t *testing.T) {
	srv := pgtest.Start(t)
	b := newBackend(t, srv.DSN())
	ctx := t.Context()
	a, err := b.Open(ctx, "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	c, err := b.Open(ctx, "c", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	admin := pgtest.Pool(t, srv.DSN())
	if _, err := admin.Exec(ctx, `SELECT setval('hustings.tokens', 1000)`); err != nil {
		t.Fatal(err)
	}
	before, err := a.Acquire(ctx, "held", 0)
	if err != nil {
		t.Fatal(err)
	}
	kept, err := a.Acquire(ctx, "kept", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx, "kept", kept, time.Minute); err != nil {
		t.Fatal(err)
	}

	srv.Kill()
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	admin = pgtest.Pool(t, srv.DSN()) // the old one's connections died with the server
	if err := answered(t, func() error {
		_, err := admin.Exec(ctx, `SELECT setval('hustings.tokens', 1)`) // as if its last values were lost
		return err
	}); err != nil {
		t.Fatal(err)
	}

	var got error
	if err := answered(t, func() error { _, got = c.Acquire(ctx, "held", 0); return got }); !errors.Is(err, backends.ErrHeld) || !strings.Contains(err.Error(), "crash") {
		t.Fatalf("Acquire of a lock whose holder has not renewed since the crash = %v, want ErrHeld naming the crash", err)
	}
	h, err := b.Holder(ctx, "kept")
	if err != nil || h.ID != "a" || h.Token != kept {
		t.Fatalf("Holder of a lock held after its release = %+v, %v, want a under %d: the hold outlives the crash", h, err, kept)
	}

	if err := answered(t, func() error { return a.KeepAlive(ctx) }); err != nil {
		t.Fatalf("the holder's renewal: %v", err)
	}
	if lost := a.Lost(); lost["held"] != before {
		t.Fatalf("Lost after the renewal = %v, want held under %d", lost, before)
	}
	if _, err := c.Acquire(ctx, "held", 0); !errors.Is(err, backends.ErrHeld) {
		t.Fatalf("Acquire while the acquiring session itself has not renewed since the crash = %v, want ErrHeld", err)
	}
	if err := c.KeepAlive(ctx); err != nil {
		t.Fatal(err)
	}
	after, err := c.Acquire(ctx, "held", 0)
	if err != nil {
		t.Fatalf("Acquire once every session renewed: %v", err)
	}
	if after <= before {
		t.Fatalf("token after the crash = %d, want > %d, the last before it", after, before)
	}
	if _, err := c.Acquire(ctx, "kept", 0); !errors.Is(err, backends.ErrHeld) {
		t.Fatalf("Acquire of a lock in its hold after the crash = %v, want ErrHeld", err)
	}
}

// TestACrashWaitsForExpiry: a session alive at the crash that never
// renews again keeps every lock from being taken until it expires, and no
// longer. The session that waits renews, as a campaign's does: one opened
// after the crash but before the first acquire noticed it counts as alive
// at the crash until it renews.
func TestACrashWaitsForExpiry(t *testing.T) {
	srv := pgtest.Start(t)
	b := newBackend(t, srv.DSN())
	ctx := t.Context()
	gone, err := b.Open(ctx, "gone", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	before, err := gone.Acquire(ctx, "lock", 0)
	if err != nil {
		t.Fatal(err)
	}
	srv.Kill()
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	var s backends.Session
	if err := answered(t, func() error { s, err = b.Open(ctx, "next", time.Minute); return err }); err != nil {
		t.Fatal(err)
	}
	var tok events.Token
	testserver.EventuallyNil(t, 30*time.Second, func() error {
		if err = s.KeepAlive(ctx); err != nil {
			return nil // failed below
		}
		if tok, err = s.Acquire(ctx, "lock", 0); errors.Is(err, backends.ErrHeld) {
			return err
		}
		return nil
	})
	if err != nil || tok <= before {
		t.Fatalf("Acquire once the crashed holder's session expired = %d, %v, want a token > %d", tok, err, before)
	}
	var expired bool
	if err := pgtest.Pool(t, srv.DSN()).QueryRow(ctx, `SELECT expires_at <= clock_timestamp() FROM hustings.sessions WHERE candidate = 'gone'`).Scan(&expired); err != nil || !expired {
		t.Fatalf("the crashed holder's session expired by the time its lock was taken: %v, %v; want true", expired, err)
	}
}

// TestMigrateMakesTheLocksTableUnlogged: a locks table of a version that
// logged it becomes UNLOGGED with its rows, its holds copied to the holds
// table, and its locks stay held, with no wait after the upgrade.
func TestMigrateMakesTheLocksTableUnlogged(t *testing.T) {
	srv := pgtest.Start(t)
	b := newBackend(t, srv.DSN())
	pool := pgtest.Pool(t, srv.DSN())
	ctx := t.Context()
	a, err := b.Open(ctx, "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	held, err := a.Acquire(ctx, "held", 0)
	if err != nil {
		t.Fatal(err)
	}
	kept, err := a.Acquire(ctx, "kept", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx, "kept", kept, time.Minute); err != nil {
		t.Fatal(err)
	}
	// The schema as a version before UNLOGGED locks left it.
	for _, stmt := range []string{`ALTER TABLE hustings.locks SET LOGGED`, `DROP TABLE hustings.epoch`, `DROP TABLE hustings.holds`} {
		if _, err := pool.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	if err := postgres.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if p := persistence(t, pool); p != "u" {
		t.Fatalf("locks table's relpersistence after Migrate = %q, want u (UNLOGGED)", p)
	}
	var holds int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM hustings.holds WHERE name = 'kept' AND token = $1`, int64(kept)).Scan(&holds); err != nil || holds != 1 {
		t.Fatalf("holds rows for kept = %d, %v, want 1", holds, err)
	}
	c, err := b.Open(ctx, "c", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Acquire(ctx, "held", 0); !errors.Is(err, backends.ErrHeld) || !strings.Contains(err.Error(), `by a`) {
		t.Fatalf("Acquire of a lock held across the upgrade = %v, want ErrHeld by a", err)
	}
	if err := a.Release(ctx, "held", held, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Acquire(ctx, "held", 0); err != nil {
		t.Fatalf("Acquire once released, right after the upgrade: %v, want it granted (no wait)", err)
	}
}

func persistence(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	var p string
	if err := pool.QueryRow(context.Background(), `SELECT relpersistence::text FROM pg_class WHERE oid = 'hustings.locks'::regclass`).Scan(&p); err != nil {
		t.Fatal(err)
	}
	return p
}
