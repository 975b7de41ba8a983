package postgres

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/puddle/v2"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/internal/hub"
	"github.com/hustings/hustings/internal/ctxerr"
	"github.com/hustings/hustings/internal/validate"
)

var (
	_ backends.Backend        = (*Backend)(nil)
	_ backends.ReleaseWatcher = (*Backend)(nil)
)

// DefaultSchema holds the backend's tables unless WithSchema says
// otherwise.
const DefaultSchema = "hustings"

// maxSchemaLen keeps the NOTIFY channel, "hustings." and the schema,
// within PostgreSQL's 63-byte identifiers.
const maxSchemaLen = 54

// Option configures a Backend (and Migrate, which takes WithSchema only).
type Option interface {
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	schema string
	listen *pgx.ConnConfig
}

// WithSchema keeps the backend's tables in schema, so that several
// applications can share one database. Default "hustings". It must be
// 1 to 54 bytes; Migrate must have been run with the same schema.
func WithSchema(schema string) Option {
	return optionFunc(func(c *config) { c.schema = schema })
}

// WithListener gives the configuration of the one connection the Backend
// dials for LISTEN (see Watch). Default: a copy of the pool's connection
// configuration. Behind a transaction pooler (PgBouncer in transaction
// mode), which breaks LISTEN, give one that reaches the server directly.
func WithListener(cfg *pgx.ConnConfig) Option {
	return optionFunc(func(c *config) { c.listen = cfg })
}

func configure(opts []Option) (config, error) {
	c := config{schema: DefaultSchema}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	if c.schema == "" || len(c.schema) > maxSchemaLen {
		return c, fmt.Errorf("%w: postgres: schema %q must be 1 to %d bytes", backends.ErrInvalid, c.schema, maxSchemaLen)
	}
	return c, nil
}

// Backend stores locks in PostgreSQL tables (see Migrate). Create it with
// New; the zero value is not usable. It is safe for concurrent use.
type Backend struct {
	pool   *pgxpool.Pool
	t      tables
	listen *pgx.ConnConfig
	hub    *hub.Hub[watched] // every Watch, over one LISTEN connection

	mu     sync.Mutex
	marked map[string]time.Time // when the marks Watch wrote end (see mark)
}

// New returns a Backend that runs its statements on pool. It does no I/O,
// starts no goroutine, and never closes pool: the caller does, after the
// last call and the last watch ended. It does not create the tables: run
// Migrate once, or apply SQL by hand. Bad options return an error
// matching backends.ErrInvalid.
func New(pool *pgxpool.Pool, opts ...Option) (*Backend, error) {
	if pool == nil {
		return nil, fmt.Errorf("%w: postgres: nil pool", backends.ErrInvalid)
	}
	c, err := configure(opts)
	if err != nil {
		return nil, err
	}
	listen := c.listen
	if listen == nil {
		listen = pool.Config().ConnConfig.Copy()
	}
	b := &Backend{pool: pool, t: newTables(c.schema), listen: listen}
	b.t.acquire, b.t.free, b.t.hold = b.t.expand(acquireSQL), b.t.expand(freeSQL), b.t.expand(holdSQL)
	b.t.mark, b.t.refresh, b.t.fence = b.t.expand(markSQL), b.t.expand(refreshSQL), b.t.expand(fenceSQL)
	b.hub = newHub(b)
	return b, nil
}

// Holder reports who holds the lock name: one SELECT of its row and its
// session's. A lock released with a hold reports the releasing candidate
// until the hold ends.
func (b *Backend) Holder(ctx context.Context, name string) (backends.Holder, error) {
	if err := validate.Name(name); err != nil {
		return backends.Holder{}, err
	}
	var h backends.Holder
	err := b.run(ctx, "holder", func() error {
		err := b.pool.QueryRow(ctx, b.t.expand(holderSQL), name).Scan(&h.ID, &h.Token, &h.Expires, &h.Session)
		if errors.Is(err, pgx.ErrNoRows) {
			h = backends.Holder{}
			return nil
		}
		return err
	})
	return h, err
}

// liveSQL is the condition under which a row l of the locks table is live
// (see the table in SQL), for a statement that reads {sessions} and
// {locks} as they are: a session seen alive in any snapshot is alive now.
const liveSQL = `l.expires_at > clock_timestamp() AND (l.hold OR EXISTS (
  SELECT 1 FROM {sessions} ls WHERE ls.id = l.session_id AND ls.expires_at > clock_timestamp()))`

// holderSQL reads the holder of a live lock row, when its term ends
// unless renewed (a session's expires_at is never infinite, a hold's
// never is either), and its session ("" for a hold).
const holderSQL = `SELECT l.candidate, l.token,
  CASE WHEN l.hold THEN l.expires_at
    ELSE LEAST(l.expires_at, (SELECT s.expires_at FROM {sessions} s WHERE s.id = l.session_id)) END,
  CASE WHEN l.hold THEN '' ELSE l.session_id END
FROM {locks} l WHERE l.name = $1 AND ` + liveSQL

// listSQL reads the names of the live lock rows that start with $1.
const listSQL = `SELECT l.name FROM {locks} l WHERE left(l.name, length($1)) = $1 AND ` + liveSQL + ` ORDER BY l.name COLLATE "C"`

// List returns the names of the locks held now that start with prefix,
// sorted by their bytes: one SELECT, which reads every lock row under
// prefix (a scan of the locks table).
func (b *Backend) List(ctx context.Context, prefix string) ([]string, error) {
	var names []string
	err := b.run(ctx, "list", func() error {
		rows, err := b.pool.Query(ctx, b.t.expand(listSQL), prefix)
		if err != nil {
			return err
		}
		names, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if len(names) == 0 {
		names = nil
	}
	return names, err
}

// maxTries bounds how often one call runs a statement that failed with a
// serialization failure (40001) or a deadlock (40P01): both mean the
// statement did nothing and may run again.
const maxTries = 5

// run runs stmt, again after a serialization failure or a deadlock
// (bounded, with a short jittered pause), and translates its error.
func (b *Backend) run(ctx context.Context, op string, stmt func() error) error {
	if err := ctx.Err(); err != nil {
		return unavailable(ctx, op, err)
	}
	var err error
	for try := range maxTries {
		if err = stmt(); !retryable(err) {
			break
		}
		pause := time.Duration(1+rand.IntN(5<<try)) * time.Millisecond
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return unavailable(ctx, op, err)
		}
	}
	if err != nil {
		return unavailable(ctx, op, err)
	}
	return nil
}

// retryable reports a serialization failure or a deadlock.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")
}

// unavailable wraps err, a failure to reach PostgreSQL or to get its
// answer, in backends.ErrUnavailable (or ErrInvalid if the pool was
// closed, or the tables are missing: no retry cures those), and in ctx's
// error too when ctx ended.
func unavailable(ctx context.Context, op string, err error) error {
	if errors.Is(err, puddle.ErrClosedPool) {
		return fmt.Errorf("%w: postgres: %s: %w (the caller closed the pool)", backends.ErrInvalid, op, err)
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "42P01" || pe.Code == "3F000" || pe.Code == "42883") {
		return fmt.Errorf("%w: postgres: %s: %w (run postgres.Migrate first)", backends.ErrInvalid, op, err)
	}
	cerr := ctxerr.Of(ctx, err)
	if cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w: postgres: %s: %w (%w)", backends.ErrUnavailable, op, err, cerr)
	}
	return fmt.Errorf("%w: postgres: %s: %w", backends.ErrUnavailable, op, err)
}

// ms returns d in whole milliseconds, rounded up: a session or lock never
// ends before the caller thinks it does.
func ms(d time.Duration) int64 {
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}
