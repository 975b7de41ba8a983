package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/postgres"
	"github.com/hustings/hustings/backends/postgres/pgtest"
)

// TestSQLNamesTheSchema: the printed SQL creates everything in the schema
// it is given, quoted.
func TestSQLNamesTheSchema(t *testing.T) {
	for schema, want := range map[string]string{"": `"hustings"`, "app": `"app"`, `Odd"Name`: `"Odd""Name"`} {
		sql := postgres.SQL(schema)
		for _, obj := range []string{"SCHEMA IF NOT EXISTS " + want, want + ".sessions", want + ".locks", want + ".members", want + ".tokens", want + ".renew_session", want + ".keep_alive", want + ".epoch", want + ".holds", "UNLOGGED", "NO CYCLE"} {
			if !strings.Contains(sql, obj) {
				t.Errorf("SQL(%q) lacks %s", schema, obj)
			}
		}
	}
}

// TestMigrate: Migrate is idempotent, also when run concurrently; a
// backend whose tables are missing fails with ErrInvalid naming Migrate;
// two schemas keep their locks apart.
func TestMigrate(t *testing.T) {
	srv := pgtest.Start(t)
	pool := pgtest.Pool(t, srv.DSN())
	ctx := t.Context()
	unmigrated, err := postgres.New(pool, postgres.WithSchema("nothing_here"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := unmigrated.Open(ctx, "a", time.Second); !errors.Is(err, backends.ErrInvalid) || !strings.Contains(err.Error(), "Migrate") {
		t.Fatalf("Open before Migrate: %v, want ErrInvalid naming Migrate", err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		schema := []string{"one", "two"}[i%2]
		wg.Go(func() { errs <- postgres.Migrate(ctx, pool, postgres.WithSchema(schema)) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent Migrate: %v", err)
		}
	}
	if err := postgres.Migrate(ctx, pool, postgres.WithListener(pool.Config().ConnConfig)); !errors.Is(err, backends.ErrInvalid) {
		t.Fatalf("Migrate with WithListener: %v, want ErrInvalid", err)
	}
	for _, schema := range []string{"one", "two"} {
		b, err := postgres.New(pool, postgres.WithSchema(schema))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := openSession(t, b, schema, time.Minute).Acquire(ctx, "shared-name", 0); err != nil {
			t.Fatalf("schema %s: Acquire: %v", schema, err)
		}
	}
}

// counter counts the statements a pool sends.
type counter struct{ n atomic.Int64 }

func (c *counter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}

func (c *counter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TestKeepAliveIsOneStatement: a session holding 1,000 locks renews and
// confirms them all with one statement per KeepAlive, and finds a lock
// deleted among them.
func TestKeepAliveIsOneStatement(t *testing.T) {
	srv := pgtest.Start(t)
	cfg, err := pgxpool.ParseConfig(srv.DSN())
	if err != nil {
		t.Fatal(err)
	}
	var c counter
	cfg.ConnConfig.Tracer = &c
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	ctx := t.Context()
	if err := postgres.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	b, err := postgres.New(pool)
	if err != nil {
		t.Fatal(err)
	}
	s := openSession(t, b, "many", time.Minute)
	const locks = 1000
	for i := range locks {
		if _, err := s.Acquire(ctx, fmt.Sprintf("lock-%d", i), 0); err != nil {
			t.Fatal(err)
		}
	}
	for round := range 3 {
		before := c.n.Load()
		if err := s.KeepAlive(ctx); err != nil {
			t.Fatal(err)
		}
		if n := c.n.Load() - before; n != 1 {
			t.Fatalf("round %d: KeepAlive of %d locks sent %d statements, want 1", round, locks, n)
		}
	}
	if lost := s.Lost(); lost != nil {
		t.Fatalf("Lost() = %v with every lock in place", lost)
	}
	deleteLock(t, pool, "lock-500")
	if err := s.KeepAlive(ctx); err != nil {
		t.Fatal(err)
	}
	if lost := s.Lost(); len(lost) != 1 || lost["lock-500"] == 0 {
		t.Fatalf("Lost() = %v, want only lock-500", lost)
	}
}

// TestMigrateOfCurrentSchemaTakesNoTableLock: Migrate of a schema already
// in place waits for no writer of the tables, and so stalls none (its
// CREATE INDEX IF NOT EXISTS would wait for the open transaction below,
// and every later write for it).
func TestMigrateOfCurrentSchemaTakesNoTableLock(t *testing.T) {
	srv := pgtest.Start(t)
	pool := pgtest.Pool(t, srv.DSN())
	ctx := t.Context()
	if err := postgres.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, `DELETE FROM hustings.locks WHERE name = 'nothing'`); err != nil {
		t.Fatal(err)
	}
	mctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := postgres.Migrate(mctx, pool); err != nil {
		t.Fatalf("Migrate beside an open writer of the locks table: %v", err)
	}
}

// oldKeepAlive is the signature of the keep-alive function of the
// versions that renewed every lock row (its body matters not here).
const oldKeepAlive = `CREATE OR REPLACE FUNCTION hustings.keep_alive(p_session text,
  OUT alive boolean, OUT names text[], OUT tokens bigint[])
LANGUAGE sql AS $$ SELECT true, '{}'::text[], '{}'::bigint[] $$`

// TestMigrateRetiresTheOldKeepAlive: Migrate upgrades a schema of a
// version that renewed every lock row; from then on the old keep_alive
// refuses, and the old version's Migrate, which would put it back, fails.
func TestMigrateRetiresTheOldKeepAlive(t *testing.T) {
	srv := pgtest.Start(t)
	pool := pgtest.Pool(t, srv.DSN())
	ctx := t.Context()
	if err := postgres.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	// Make it the old version's schema.
	if _, err := pool.Exec(ctx, `DROP FUNCTION hustings.renew_session(text); DROP FUNCTION hustings.keep_alive(text)`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, oldKeepAlive); err != nil {
		t.Fatal(err)
	}

	if err := postgres.Migrate(ctx, pool); err != nil {
		t.Fatalf("Migrate of the old version's schema: %v", err)
	}
	b, err := postgres.New(pool)
	if err != nil {
		t.Fatal(err)
	}
	s := openSession(t, b, "upgraded", time.Minute)
	if _, err := s.Acquire(ctx, "after-upgrade", 0); err != nil {
		t.Fatal(err)
	}
	if err := s.KeepAlive(ctx); err != nil {
		t.Fatalf("KeepAlive after the upgrade: %v", err)
	}
	var pe *pgconn.PgError
	_, err = pool.Exec(ctx, `SELECT * FROM hustings.keep_alive('any')`)
	if !errors.As(err, &pe) || pe.Code != "55000" || !strings.Contains(pe.Message, "upgrade this process") {
		t.Fatalf("old keep_alive after the upgrade: %v, want SQLSTATE 55000 asking for an upgrade", err)
	}
	_, err = pool.Exec(ctx, oldKeepAlive)
	if !errors.As(err, &pe) || pe.Code != "42P13" {
		t.Fatalf("the old version's CREATE OR REPLACE of keep_alive: %v, want SQLSTATE 42P13 (return type changed)", err)
	}
	if err := postgres.Migrate(ctx, pool); err != nil {
		t.Fatalf("Migrate again: %v", err)
	}
}
