package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/backendtest"
	"github.com/hustings/hustings/backends/mysql"
	"github.com/hustings/hustings/backends/mysql/mysqltest"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/faultlink"
	"github.com/hustings/hustings/internal/testserver"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, append(faultlink.KnownLeaks(),
		goleak.IgnoreTopFunction("database/sql.(*DB).connectionOpener"))...)
}

// newBackend returns a Backend on a pool of dsn, migrated, polling fast;
// the pool is closed when the test ends.
func newBackend(t testing.TB, dsn string) *mysql.Backend {
	t.Helper()
	db := mysqltest.DB(t, dsn)
	if err := mysql.Migrate(t.Context(), db); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	b, err := mysql.New(db, mysql.WithPoll(50*time.Millisecond))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return b
}

func TestContract(t *testing.T) {
	srv := mysqltest.Start(t)
	db := mysqltest.DB(t, srv.DSN())
	if err := mysql.Migrate(t.Context(), db); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(t.Context(), `CREATE TABLE fenced_writes (name VARBINARY(1024), token BIGINT)`); err != nil {
		t.Fatal(err)
	}
	backendtest.Run(t, backendtest.Harness{
		New: func(t *testing.T) backends.Backend { return newBackend(t, srv.DSN()) },
		TTL: time.Second,
		Delete: func(t *testing.T, _ backends.Backend, name string) {
			res, err := db.ExecContext(t.Context(), `DELETE FROM hustings_locks WHERE name = ?`, name)
			if n, _ := res.RowsAffected(); err != nil || n != 1 {
				t.Fatalf("DELETE lock %q: %v, %d rows; want 1 row deleted", name, err, n)
			}
		},
		Fence: func(ctx context.Context, b backends.Backend, name string, token events.Token) error {
			return fencedWrite(ctx, db, b.(*mysql.Backend), name, token)
		},
	})
}

// fencedWrite writes a row of fenced_writes (made by TestContract) in a
// transaction that Fence checks first, and commits it.
func fencedWrite(ctx context.Context, db *sql.DB, b *mysql.Backend, name string, token events.Token) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if err := b.Fence(ctx, tx, name, token); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO fenced_writes VALUES (?, ?)`, name, int64(token)); err != nil {
		return err
	}
	return tx.Commit()
}

// A fence taken in a transaction keeps a take-over out until the
// transaction ends, and a stale token is refused.
func TestFenceHoldsOffTakeOver(t *testing.T) {
	srv := mysqltest.Start(t)
	b := newBackend(t, srv.DSN())
	db := mysqltest.DB(t, srv.DSN())
	ctx := t.Context()
	a := backendtest.Open(t, b, "a", time.Second)
	tok := backendtest.Acquire(t, a, "job")
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	if err := b.Fence(ctx, tx, "job", tok+1); !errors.Is(err, backends.ErrNotHeld) {
		t.Fatalf("Fence with a token not granted = %v; want ErrNotHeld", err)
	}
	if err := b.Fence(ctx, tx, "job", tok); err != nil {
		t.Fatalf("Fence: %v", err)
	}
	released := make(chan error, 1)
	go func() { released <- a.Release(ctx, "job", tok, 0) }()
	select {
	case err := <-released:
		t.Fatalf("Release returned (%v) while a fenced transaction held the lock row", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-released; err != nil {
		t.Fatalf("Release after the fenced commit: %v", err)
	}
	tx2, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx2.Rollback() }()
	if err := b.Fence(ctx, tx2, "job", tok); !errors.Is(err, backends.ErrNotHeld) {
		t.Fatalf("Fence after Release = %v; want ErrNotHeld", err)
	}
}

// Migrate runs twice, and beside itself, without error, and SQL prints
// what it runs.
func TestMigrateIsIdempotent(t *testing.T) {
	srv := mysqltest.Start(t)
	db := mysqltest.DB(t, srv.DSN())
	errs := make(chan error, 3)
	for range 3 {
		go func() { errs <- mysql.Migrate(t.Context(), db, mysql.WithPrefix("m_")) }()
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatalf("Migrate: %v", err)
		}
	}
	if err := mysql.Migrate(t.Context(), db, mysql.WithPrefix("m_")); err != nil {
		t.Fatalf("Migrate again: %v", err)
	}
	b, err := mysql.New(db, mysql.WithPrefix("m_"))
	if err != nil {
		t.Fatal(err)
	}
	s := backendtest.Open(t, b, "a", time.Second)
	backendtest.Acquire(t, s, "x")
	if err := s.KeepAlive(t.Context()); err != nil {
		t.Fatalf("KeepAlive: %v", err)
	}
	stmts := mysql.SQL("m_")
	if len(stmts) == 0 || !strings.Contains(strings.Join(stmts, ";\n"), "CREATE TABLE IF NOT EXISTS m_locks") {
		t.Fatalf("SQL(m_) = %q; want the CREATE TABLE of m_locks", stmts)
	}
}

// TestMigrateKeepsTheProcedure: a Migrate over a schema already as it
// should be does not drop and recreate the renew procedure, so a process
// killed while it migrates (or a Migrate beside live sessions) never
// leaves the sessions without it; a procedure of another body is
// replaced.
func TestMigrateKeepsTheProcedure(t *testing.T) {
	srv := mysqltest.Start(t)
	db := mysqltest.DB(t, srv.DSN())
	if err := mysql.Migrate(t.Context(), db, mysql.WithPrefix("k_")); err != nil {
		t.Fatal(err)
	}
	created := func() string {
		t.Helper()
		var at, body string
		if err := db.QueryRowContext(t.Context(), `SELECT CONCAT(CREATED, ''), ROUTINE_DEFINITION FROM information_schema.ROUTINES
WHERE ROUTINE_SCHEMA = DATABASE() AND ROUTINE_NAME = 'k_renew'`).Scan(&at, &body); err != nil {
			t.Fatalf("reading the procedure: %v", err)
		}
		return at + " " + body
	}
	first := created()
	// CREATED counts whole seconds: once the server's clock is past the
	// procedure's, a recreation would show.
	testserver.Eventually(t, "the server's clock past the procedure's CREATED second", 10*time.Second, func() bool {
		var later bool
		if err := db.QueryRowContext(t.Context(), `SELECT NOW() > CREATED FROM information_schema.ROUTINES
WHERE ROUTINE_SCHEMA = DATABASE() AND ROUTINE_NAME = 'k_renew'`).Scan(&later); err != nil {
			t.Fatalf("reading the procedure's CREATED: %v", err)
		}
		return later
	})
	if err := mysql.Migrate(t.Context(), db, mysql.WithPrefix("k_")); err != nil {
		t.Fatal(err)
	}
	if again := created(); again != first {
		t.Fatalf("Migrate over a migrated schema recreated the procedure: %q, then %q", first, again)
	}
	if _, err := db.ExecContext(t.Context(), "DROP PROCEDURE k_renew"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(t.Context(), "CREATE PROCEDURE k_renew(IN sid BINARY(32)) BEGIN SELECT 1; END"); err != nil {
		t.Fatal(err)
	}
	if err := mysql.Migrate(t.Context(), db, mysql.WithPrefix("k_")); err != nil {
		t.Fatal(err)
	}
	if replaced := created(); !strings.Contains(replaced, "UPDATE k_sessions") {
		t.Fatalf("an old procedure was not replaced: %q", replaced)
	}
}

// Without Migrate, calls fail with ErrInvalid, not ErrUnavailable: no
// retry cures missing tables.
func TestMissingTablesAreInvalid(t *testing.T) {
	srv := mysqltest.Start(t)
	b, err := mysql.New(mysqltest.DB(t, srv.DSN()), mysql.WithPrefix("none_"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Open(t.Context(), "a", time.Second); !errors.Is(err, backends.ErrInvalid) {
		t.Fatalf("Open without Migrate = %v; want ErrInvalid", err)
	}
}

// TestGroups runs the group scenario of the contract suite (crashes and
// resignations among 8 candidates for 3 slots) against a real server, in
// real time.
func TestGroups(t *testing.T) {
	srv := mysqltest.Start(t)
	backendtest.RunGroups(t, backendtest.Harness{
		New: func(t *testing.T) backends.Backend { return newBackend(t, srv.DSN()) },
		TTL: time.Second,
	})
}

func TestStorm(t *testing.T) {
	srv := mysqltest.Start(t)
	backendtest.RunStorm(t, backendtest.Harness{
		New: func(t *testing.T) backends.Backend { return newBackend(t, srv.DSN()) },
		TTL: 3 * time.Second,
	}, 500)
}

// TestClosedClient: see backendtest.ClosedClient.
func TestClosedClient(t *testing.T) {
	db, err := sql.Open("mysql", mysqltest.DSN("127.0.0.1:1", "x"))
	if err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	b, err := mysql.New(db)
	if err != nil {
		t.Fatal(err)
	}
	backendtest.ClosedClient(t, b)
}

func TestNewRejectsBadInput(t *testing.T) {
	db, err := sql.Open("mysql", mysqltest.DSN("127.0.0.1:1", "x")) // never dialled
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tests := []struct {
		name string
		db   *sql.DB
		opts []mysql.Option
	}{
		{"nil db", nil, nil},
		{"empty prefix", db, []mysql.Option{mysql.WithPrefix("")}},
		{"quoted prefix", db, []mysql.Option{mysql.WithPrefix("a`b")}},
		{"long prefix", db, []mysql.Option{mysql.WithPrefix(strings.Repeat("p", 41))}},
		{"poll below 1ms", db, []mysql.Option{mysql.WithPoll(time.Microsecond)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if b, err := mysql.New(tt.db, tt.opts...); !errors.Is(err, backends.ErrInvalid) || b != nil {
				t.Fatalf("New = %v, %v; want ErrInvalid", b, err)
			}
		})
	}
}
