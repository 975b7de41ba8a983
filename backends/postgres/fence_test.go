package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/postgres/pgtest"
	"github.com/hustings/hustings/events"
)

// TestFenceRefusesStaleLeader races a take-over against the old leader's
// transaction: the take-over waits for the fenced transaction to commit,
// the new holder's token is larger, and a transaction of the old leader
// that begins after the take-over is refused by Fence, so its write never
// lands.
func TestFenceRefusesStaleLeader(t *testing.T) {
	srv := pgtest.Start(t)
	pool := pgtest.Pool(t, srv.DSN())
	b := newBackend(t, srv.DSN())
	ctx := t.Context()
	if _, err := pool.Exec(ctx, `CREATE TABLE writes (holder text, token bigint)`); err != nil {
		t.Fatal(err)
	}
	const ttl = time.Second
	old := openSession(t, b, "old", ttl)
	oldTok, err := old.Acquire(ctx, "fenced", 0)
	if err != nil {
		t.Fatal(err)
	}

	// The old leader fences a transaction, then stalls past its TTL.
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if err := b.Fence(ctx, tx, "fenced", oldTok); err != nil {
		t.Fatalf("Fence by the holder: %v", err)
	}
	waitFor(t, pool, `SELECT expires_at < clock_timestamp() FROM hustings.sessions WHERE id = $1`, sessionID(t, pool, "old"))

	next := openSession(t, b, "next", ttl)
	type result struct {
		tok events.Token
		err error
	}
	took := make(chan result, 1)
	go func() {
		tok, err := next.Acquire(ctx, "fenced", 0)
		took <- result{tok, err}
	}()
	select {
	case r := <-took:
		t.Fatalf("take-over returned (%d, %v) while the fenced transaction was open", r.tok, r.err)
	case <-time.After(300 * time.Millisecond):
	}
	if _, err := tx.Exec(ctx, `INSERT INTO writes VALUES ('old', $1)`, int64(oldTok)); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatalf("commit of the fenced write: %v", err)
	}
	var r result
	select {
	case r = <-took:
	case <-time.After(30 * time.Second):
		t.Fatal("take-over still blocked 30 s after the fenced transaction committed")
	}
	if r.err != nil || r.tok <= oldTok {
		t.Fatalf("take-over = (%d, %v), want a token > %d", r.tok, r.err, oldTok)
	}

	// The old leader, still believing, tries again: refused.
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if err := b.Fence(ctx, tx, "fenced", oldTok); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO writes VALUES ('old', $1)`, int64(oldTok))
		return err
	})
	if !errors.Is(err, backends.ErrNotHeld) {
		t.Fatalf("stale leader's fenced transaction: %v, want ErrNotHeld", err)
	}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if err := b.Fence(ctx, tx, "fenced", r.tok); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO writes VALUES ('next', $1)`, int64(r.tok))
		return err
	})
	if err != nil {
		t.Fatalf("new leader's fenced transaction: %v", err)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM writes WHERE holder = 'old'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("old leader's writes = %d, %v; want only the one fenced before the take-over", n, err)
	}
}

// TestFenceRejectsBadInput: a released lock, token 0 and a bad name.
func TestFenceRejectsBadInput(t *testing.T) {
	srv := pgtest.Start(t)
	pool := pgtest.Pool(t, srv.DSN())
	b := newBackend(t, srv.DSN())
	ctx := t.Context()
	s := openSession(t, b, "a", time.Minute)
	tok, err := s.Acquire(ctx, "released", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, "released", tok, time.Minute); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		lock   string
		tok    events.Token
		target error
	}{
		{"released with a hold", "released", tok, backends.ErrNotHeld},
		{"token 0", "released", 0, backends.ErrNotHeld},
		{"never held", "never", 1, backends.ErrNotHeld},
		{"empty name", "", 1, backends.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tx, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(context.Background())
			if err := b.Fence(ctx, tx, tt.lock, tt.tok); !errors.Is(err, tt.target) {
				t.Fatalf("Fence: %v, want %v", err, tt.target)
			}
		})
	}
}

// openSession opens a session that is closed when the test ends.
func openSession(t testing.TB, b backends.Backend, id string, ttl time.Duration) backends.Session {
	t.Helper()
	s, err := b.Open(t.Context(), id, ttl)
	if err != nil {
		t.Fatalf("Open(%q): %v", id, err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}
