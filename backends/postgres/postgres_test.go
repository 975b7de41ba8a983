package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/backendtest"
	"github.com/hustings/hustings/backends/postgres"
	"github.com/hustings/hustings/backends/postgres/pgtest"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/faultlink"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, faultlink.KnownLeaks()...)
}

// newBackend returns a Backend on a pool of dsn, migrated, whose pool is
// closed when the test ends.
func newBackend(t testing.TB, dsn string, opts ...postgres.Option) *postgres.Backend {
	t.Helper()
	pool := pgtest.Pool(t, dsn)
	if err := postgres.Migrate(t.Context(), pool, schemaOf(opts)...); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	b, err := postgres.New(pool, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return b
}

// schemaOf keeps the options Migrate takes.
func schemaOf(opts []postgres.Option) []postgres.Option {
	var out []postgres.Option
	for _, o := range opts {
		if postgres.IsSchemaOption(o) {
			out = append(out, o)
		}
	}
	return out
}

// deleteLock deletes the row of lock name behind its holder's back, as an
// operator would.
func deleteLock(t *testing.T, pool *pgxpool.Pool, name string) {
	t.Helper()
	tag, err := pool.Exec(t.Context(), `DELETE FROM hustings.locks WHERE name = $1`, name)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("DELETE lock %q: %v, %v; want 1 row deleted", name, tag, err)
	}
}

func TestContract(t *testing.T) {
	srv := pgtest.Start(t)
	pool := pgtest.Pool(t, srv.DSN())
	if _, err := pool.Exec(t.Context(), `CREATE TABLE fenced_writes (name text, token bigint)`); err != nil {
		t.Fatal(err)
	}
	backendtest.Run(t, backendtest.Harness{
		New:    func(t *testing.T) backends.Backend { return newBackend(t, srv.DSN()) },
		TTL:    time.Second,
		Delete: func(t *testing.T, _ backends.Backend, name string) { deleteLock(t, pool, name) },
		Fence: func(ctx context.Context, b backends.Backend, name string, token events.Token) error {
			return fencedWrite(ctx, b.(*postgres.Backend), pool, name, token)
		},
	})
}

// fencedWrite writes a row of fenced_writes (made by TestContract) in a
// transaction that b's Fence checks first, and commits it.
func fencedWrite(ctx context.Context, b *postgres.Backend, pool *pgxpool.Pool, name string, token events.Token) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if err := b.Fence(ctx, tx, name, token); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO fenced_writes VALUES ($1, $2)`, name, int64(token))
		return err
	})
}

// TestGroups runs the group scenario of the contract suite (crashes and
// resignations among 8 candidates for 3 slots) against a real server, in
// real time.
func TestGroups(t *testing.T) {
	srv := pgtest.Start(t)
	backendtest.RunGroups(t, backendtest.Harness{
		New: func(t *testing.T) backends.Backend { return newBackend(t, srv.DSN()) },
		TTL: time.Second,
	})
}

// TestStorm starts a storm of campaigns on one shared session at once
// (see backendtest.RunStorm), on loopback and over a link with 50 ms of
// latency.
// slowStorm is how many campaigns storm over the slow link: 2,000 queue
// for 1.6 s at 64 calls in flight per 50 ms round trip, half the TTL,
// which is what the keep-alive must not wait behind; 10,000 would add a
// minute of the same to every run of the suite.
const slowStorm = 2_000

// loopbackStorm is how many campaigns storm on loopback: RunStorm's
// 10,000 took 3.9 s here on a quiet machine, but beside two CPU burners
// the keep-alive, then one UPDATE of every lock row of the session, outlasted
// the 3 s TTL and the storm never settled.
const loopbackStorm = 2_000

func TestStorm(t *testing.T) {
	srv := pgtest.Start(t)
	t.Run("Loopback", func(t *testing.T) {
		backendtest.RunStorm(t, backendtest.Harness{
			New: func(t *testing.T) backends.Backend { return newBackend(t, srv.DSN()) },
			TTL: time.Second,
		}, loopbackStorm)
	})
	t.Run("SlowLink", func(t *testing.T) {
		link := faultlink.NewLink(t, srv.Addr())
		link.Latency(50*time.Millisecond, 0)
		backendtest.RunStorm(t, backendtest.Harness{
			New: func(t *testing.T) backends.Backend { return newBackend(t, pgtest.DSN(link.Addr())) },
			TTL: time.Second,
		}, slowStorm)
	})
}

// TestClosedClient: see backendtest.ClosedClient.
func TestClosedClient(t *testing.T) {
	srv := pgtest.Start(t)
	pool, err := pgtest.NewPool(srv.DSN())
	if err != nil {
		t.Fatal(err)
	}
	pool.Close()
	b, err := postgres.New(pool)
	if err != nil {
		t.Fatal(err)
	}
	backendtest.ClosedClient(t, b)
}

func TestNewRejectsBadInput(t *testing.T) {
	pool, err := pgtest.NewPool(pgtest.DSN("127.0.0.1:1")) // never dialled
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	tests := []struct {
		name string
		pool *pgxpool.Pool
		opts []postgres.Option
	}{
		{"nil pool", nil, nil},
		{"empty schema", pool, []postgres.Option{postgres.WithSchema("")}},
		{"long schema", pool, []postgres.Option{postgres.WithSchema("s234567890123456789012345678901234567890123456789012345")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if b, err := postgres.New(tt.pool, tt.opts...); !errors.Is(err, backends.ErrInvalid) || b != nil {
				t.Fatalf("New = %v, %v; want ErrInvalid", b, err)
			}
		})
	}
}
