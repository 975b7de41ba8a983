package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/postgres/pgtest"
)

// TestContenderWaitsForNobody: an acquire of a lock another live session
// holds answers ErrHeld without waiting for a transaction that has the
// holder's row locked (a fenced transaction here; a keep-alive or a
// release in production), and the contender's keep-alive does not wait
// behind it either.
func TestContenderWaitsForNobody(t *testing.T) {
	srv := pgtest.Start(t)
	pool := pgtest.Pool(t, srv.DSN())
	b := newBackend(t, srv.DSN())
	ctx := t.Context()
	holder := openSession(t, b, "holder", time.Minute)
	tok, err := holder.Acquire(ctx, "busy", 0)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := b.Fence(ctx, tx, "busy", tok); err != nil {
		t.Fatal(err)
	}
	contender := openSession(t, b, "contender", time.Minute)
	for range 3 {
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := contender.Acquire(actx, "busy", 0)
		cancel()
		if !errors.Is(err, backends.ErrHeld) {
			t.Fatalf("Acquire of a held lock whose row is locked: %v, want ErrHeld at once", err)
		}
		kctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err = contender.KeepAlive(kctx)
		cancel()
		if err != nil {
			t.Fatalf("contender's KeepAlive: %v", err)
		}
	}
}

// TestAcquireTakesNoLockOnItsSession: an acquire neither waits for its
// session's renewal nor locks the session row, so that a storm of acquires
// on one session cannot starve the renewal's FOR UPDATE (new share locks
// do not queue behind it: beside a storm of 64 acquires in flight, a
// keep-alive waited 2 s of a 3 s TTL).
func TestAcquireTakesNoLockOnItsSession(t *testing.T) {
	srv := pgtest.Start(t)
	pool := pgtest.Pool(t, srv.DSN())
	b := newBackend(t, srv.DSN())
	ctx := t.Context()
	s := openSession(t, b, "storming", time.Minute)
	renewal, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = renewal.Rollback(context.WithoutCancel(ctx)) }()
	var alive bool
	if err := renewal.QueryRow(ctx, `SELECT alive FROM hustings.renew_session($1)`, sessionID(t, pool, "storming")).Scan(&alive); err != nil || !alive {
		t.Fatalf("renewal: %v, %v; want alive", alive, err)
	}
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	_, err = s.Acquire(actx, "beside-a-renewal", 0)
	cancel()
	if err != nil {
		t.Fatalf("Acquire while its session's renewal is open: %v, want it granted at once", err)
	}
	if err := renewal.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.KeepAlive(ctx); err != nil || s.Lost() != nil {
		t.Fatalf("KeepAlive after: %v, lost %v; want the lock confirmed", err, s.Lost())
	}
}
