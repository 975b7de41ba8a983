package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/postgres"
	"github.com/hustings/hustings/backends/postgres/pgtest"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/testserver"
)

// rowVersions returns the xmin of every row of table (the transaction
// that wrote its current version) whose column col is val, in a stable
// order: an UPDATE, even one that changes nothing, gives a row a new one.
func rowVersions(t *testing.T, pool *pgxpool.Pool, table, col, val string) []string {
	t.Helper()
	rows, err := pool.Query(t.Context(), fmt.Sprintf(`SELECT xmin::text FROM hustings.%s WHERE %s = $1 ORDER BY ctid`, table, col), val)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// expireSession ends the session of candidate on the server now, as its
// TTL passing without a keep-alive would.
func expireSession(t *testing.T, pool *pgxpool.Pool, candidate string) {
	t.Helper()
	tag, err := pool.Exec(t.Context(), `UPDATE hustings.sessions SET expires_at = clock_timestamp() - interval '1 millisecond' WHERE candidate = $1`, candidate)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("expire the session of %s: %v, %v; want 1 row", candidate, tag, err)
	}
}

// sessionID returns the session ID of candidate's one session.
func sessionID(t *testing.T, pool *pgxpool.Pool, candidate string) string {
	t.Helper()
	var id string
	if err := pool.QueryRow(t.Context(), `SELECT id FROM hustings.sessions WHERE candidate = $1`, candidate).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestKeepAliveWritesTheSessionRowAlone: a KeepAlive of a session holding
// many locks writes its session row and no lock row, and still confirms
// every lock.
func TestKeepAliveWritesTheSessionRowAlone(t *testing.T) {
	srv := pgtest.Start(t)
	pool := pgtest.Pool(t, srv.DSN())
	b := newBackend(t, srv.DSN())
	ctx := t.Context()
	s := openSession(t, b, "many", time.Minute)
	const locks = 200
	for i := range locks {
		if _, err := s.Acquire(ctx, fmt.Sprintf("lock-%d", i), 0); err != nil {
			t.Fatal(err)
		}
	}
	sid := sessionID(t, pool, "many")
	lockRows := rowVersions(t, pool, "locks", "session_id", sid)
	sessionRow := rowVersions(t, pool, "sessions", "id", sid)
	if len(lockRows) != locks {
		t.Fatalf("%d lock rows of the session, want %d", len(lockRows), locks)
	}
	for range 3 {
		if err := s.KeepAlive(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if after := rowVersions(t, pool, "locks", "session_id", sid); !slices.Equal(after, lockRows) {
		t.Fatalf("KeepAlive wrote lock rows: versions %v, were %v", after[:3], lockRows[:3])
	}
	if after := rowVersions(t, pool, "sessions", "id", sid); slices.Equal(after, sessionRow) {
		t.Fatalf("KeepAlive left the session row as it was (version %v)", after)
	}
	if lost := s.Lost(); lost != nil {
		t.Fatalf("Lost() = %v with every lock in place", lost)
	}
}

// TestLockOfExpiredSessionIsFree: once its session expired, a lock is free
// to another session, though its own row's expires_at is in the future;
// Holder reports nobody, the old holder's Fence refuses, and the old
// holder's KeepAlive finds its session lost.
func TestLockOfExpiredSessionIsFree(t *testing.T) {
	srv := pgtest.Start(t)
	pool := pgtest.Pool(t, srv.DSN())
	b := newBackend(t, srv.DSN())
	ctx := t.Context()
	old := openSession(t, b, "old", time.Minute)
	oldTok, err := old.Acquire(ctx, "free-once-expired", 0)
	if err != nil {
		t.Fatal(err)
	}
	// However the row's own expiry is stored, it lies an hour ahead.
	if _, err := pool.Exec(ctx, `UPDATE hustings.locks SET expires_at = clock_timestamp() + interval '1 hour' WHERE name = 'free-once-expired'`); err != nil {
		t.Fatal(err)
	}
	if h, err := b.Holder(ctx, "free-once-expired"); err != nil || h.ID != "old" || h.Token != oldTok {
		t.Fatalf("Holder while the session lives = %+v, %v; want old under %d", h, err, oldTok)
	}
	expireSession(t, pool, "old")

	if h, err := b.Holder(ctx, "free-once-expired"); err != nil || h != (backends.Holder{}) {
		t.Fatalf("Holder once the session expired = %+v, %v; want nobody", h, err)
	}
	if err := fence(ctx, b, pool, "free-once-expired", oldTok); !errors.Is(err, backends.ErrNotHeld) {
		t.Fatalf("Fence once the session expired: %v, want ErrNotHeld", err)
	}
	next := openSession(t, b, "next", time.Minute)
	nextTok, err := next.Acquire(ctx, "free-once-expired", 0)
	if err != nil {
		t.Fatalf("Acquire of a lock whose session expired: %v", err)
	}
	if nextTok <= oldTok {
		t.Fatalf("take-over token %d, want more than %d", nextTok, oldTok)
	}
	if h, err := b.Holder(ctx, "free-once-expired"); err != nil || h.ID != "next" || h.Token != nextTok {
		t.Fatalf("Holder after the take-over = %+v, %v; want next under %d", h, err, nextTok)
	}
	if err := old.KeepAlive(ctx); !errors.Is(err, backends.ErrSessionLost) {
		t.Fatalf("old holder's KeepAlive: %v, want ErrSessionLost", err)
	}
	if err := fence(ctx, b, pool, "free-once-expired", nextTok); err != nil {
		t.Fatalf("new holder's Fence: %v", err)
	}
}

// TestLeaseEndsTheLockOfALiveSession: a lock acquired with a lease is
// free once the lease ends, though its session lives on.
func TestLeaseEndsTheLockOfALiveSession(t *testing.T) {
	srv := pgtest.Start(t)
	pool := pgtest.Pool(t, srv.DSN())
	b := newBackend(t, srv.DSN())
	ctx := t.Context()
	holder := openSession(t, b, "leased", time.Minute)
	tok, err := holder.Acquire(ctx, "leased-lock", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE hustings.locks SET lease_end = clock_timestamp(), expires_at = clock_timestamp() WHERE name = 'leased-lock'`); err != nil {
		t.Fatal(err)
	}
	if err := fence(ctx, b, pool, "leased-lock", tok); !errors.Is(err, backends.ErrNotHeld) {
		t.Fatalf("Fence after the lease: %v, want ErrNotHeld", err)
	}
	if err := holder.KeepAlive(ctx); err != nil {
		t.Fatal(err)
	}
	if lost := holder.Lost(); lost["leased-lock"] != tok {
		t.Fatalf("Lost() = %v after the lease, want leased-lock under %d", lost, tok)
	}
	other := openSession(t, b, "other", time.Minute)
	if _, err := other.Acquire(ctx, "leased-lock", 0); err != nil {
		t.Fatalf("Acquire after the lease ended: %v", err)
	}
}

// TestTakeOverWaitsForACommittingRenewal: a renewal of the holder's
// session that judged it alive just before it expired, and commits just
// after, is not overtaken: a contender that finds the session expired
// waits for the renewal, sees it, and takes nothing; had the renewal
// rolled back, the contender takes the lock.
func TestTakeOverWaitsForACommittingRenewal(t *testing.T) {
	for _, commit := range []bool{true, false} {
		t.Run(map[bool]string{true: "Committed", false: "RolledBack"}[commit], func(t *testing.T) {
			srv := pgtest.Start(t)
			pool := pgtest.Pool(t, srv.DSN())
			b := newBackend(t, srv.DSN())
			ctx := t.Context()
			holder := openSession(t, b, "holder", time.Minute)
			tok, err := holder.Acquire(ctx, "contested", 0)
			if err != nil {
				t.Fatal(err)
			}
			sid := sessionID(t, pool, "holder")
			// The session has half a second left, and a renewal begins.
			if _, err := pool.Exec(ctx, `UPDATE hustings.sessions SET expires_at = clock_timestamp() + interval '500 milliseconds' WHERE id = $1`, sid); err != nil {
				t.Fatal(err)
			}
			renewal, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = renewal.Rollback(context.WithoutCancel(ctx)) }()
			var alive bool
			if err := renewal.QueryRow(ctx, `SELECT alive FROM hustings.renew_session($1)`, sid).Scan(&alive); err != nil || !alive {
				t.Fatalf("renewal: %v, %v; want alive", alive, err)
			}
			waitFor(t, pool, `SELECT expires_at < clock_timestamp() FROM hustings.sessions WHERE id = $1`, sid)

			contender := openSession(t, b, "contender", time.Minute)
			type result struct {
				tok events.Token
				err error
			}
			took := make(chan result, 1)
			go func() {
				tok, err := contender.Acquire(ctx, "contested", 0)
				took <- result{tok, err}
			}()
			waitFor(t, pool, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%' || $1 || '%')`, "WITH cur AS")
			select {
			case r := <-took:
				t.Fatalf("the contender's Acquire returned (%d, %v) while the renewal was open", r.tok, r.err)
			default:
			}
			if commit {
				err = renewal.Commit(ctx)
			} else {
				err = renewal.Rollback(ctx)
			}
			if err != nil {
				t.Fatal(err)
			}
			r := <-took
			switch {
			case commit && !errors.Is(r.err, backends.ErrHeld):
				t.Fatalf("Acquire beside a renewal that committed = %d, %v; want ErrHeld", r.tok, r.err)
			case !commit && (r.err != nil || r.tok <= tok):
				t.Fatalf("Acquire beside a renewal that rolled back = %d, %v; want a token above %d", r.tok, r.err, tok)
			}
			err = holder.KeepAlive(ctx)
			switch {
			case commit && (err != nil || holder.Lost() != nil):
				t.Fatalf("holder's KeepAlive after its renewal: %v, lost %v; want the lock kept", err, holder.Lost())
			case !commit && !errors.Is(err, backends.ErrSessionLost):
				t.Fatalf("holder's KeepAlive after the take-over: %v, want ErrSessionLost", err)
			}
		})
	}
}

// waitFor polls query (a boolean with one argument) until it is true, for
// up to 30 seconds.
func waitFor(t *testing.T, pool *pgxpool.Pool, query string, arg any) {
	t.Helper()
	testserver.EventuallyNil(t, 30*time.Second, func() error {
		var ok bool
		if err := pool.QueryRow(t.Context(), query, arg).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		if !ok {
			return fmt.Errorf("%s (%v) still false", query, arg)
		}
		return nil
	})
}

// fence runs b's Fence in a transaction of its own, rolled back.
func fence(ctx context.Context, b *postgres.Backend, pool *pgxpool.Pool, name string, token events.Token) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	return b.Fence(ctx, tx, name, token)
}
