package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/postgres"
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
	if err := postgres.Fence(ctx, tx, "busy", tok); err != nil {
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
