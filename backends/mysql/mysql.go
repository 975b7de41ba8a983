package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/internal/record"
	"github.com/hustings/hustings/internal/ctxerr"
)

var (
	_ backends.Backend = (*Backend)(nil)
)

var errInvalid = backends.ErrInvalid

// DefaultPrefix begins the names of the backend's tables unless
// WithPrefix says otherwise.
const DefaultPrefix = "hustings_"

// maxPrefixLen keeps the longest table name within MySQL's 64 bytes.
const maxPrefixLen = 40

// Option configures a Backend (and Migrate, which takes WithPrefix only).
type Option interface {
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	prefix string
	poll   time.Duration
}

// WithPrefix begins the names of the backend's tables with prefix, so
// that several applications can share one database. Default "hustings_".
// It must be 1 to 40 ASCII letters, digits or underscores; Migrate must
// have been run with the same prefix.
func WithPrefix(prefix string) Option {
	return optionFunc(func(c *config) { c.prefix = prefix })
}

// WithPoll sets how often Watch reads every watched lock, since MySQL
// cannot notify: the longest a waiter in another process takes to see a
// release. Default 1s; it must be at least 1ms. A lock that expires is
// also read when it expires as last seen, whatever the pace.
func WithPoll(d time.Duration) Option {
	return optionFunc(func(c *config) { c.poll = d })
}

func configure(opts []Option) (config, error) {
	c := config{prefix: DefaultPrefix, poll: record.DefaultPoll}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	if c.prefix == "" || len(c.prefix) > maxPrefixLen || !plain(c.prefix) {
		return c, fmt.Errorf("%w: mysql: prefix %q must be 1 to %d ASCII letters, digits or underscores", errInvalid, c.prefix, maxPrefixLen)
	}
	if c.poll < time.Millisecond {
		return c, fmt.Errorf("%w: mysql: poll %v must be at least 1ms", errInvalid, c.poll)
	}
	return c, nil
}

func plain(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

// Backend stores locks in MySQL or MariaDB tables (see Migrate). Create
// it with New; the zero value is not usable. It is safe for concurrent
// use.
type Backend struct {
	*record.Store
	d *driver
}

// New returns a Backend that runs its statements on db. It does no I/O,
// starts no goroutine, and never closes db: the caller does, after the
// last call and the last watch ended, then calls Wait. It does not create
// the tables: run Migrate once, or apply SQL by hand. A nil db or bad options return an
// error matching backends.ErrInvalid.
func New(db *sql.DB, opts ...Option) (*Backend, error) {
	if db == nil {
		return nil, fmt.Errorf("%w: mysql: nil db", errInvalid)
	}
	c, err := configure(opts)
	if err != nil {
		return nil, err
	}
	d := &driver{db: db, prefix: c.prefix}
	s, err := record.New(d, record.Config{Name: "mysql", Poll: c.poll})
	if err != nil {
		return nil, err
	}
	return &Backend{Store: s, d: d}, nil
}

// maxTries bounds how often one call runs a statement again after a
// deadlock (1213) or a lock wait timeout (1205): both mean the
// transaction was rolled back and may run again.
const maxTries = 5

// retry runs stmt, again after a deadlock or lock wait timeout (bounded,
// with a short jittered pause), and translates its error.
func retry(ctx context.Context, op string, stmt func() error) error {
	if err := ctx.Err(); err != nil {
		return unavailable(ctx, op, err)
	}
	var err error
	for try := range maxTries {
		if err = stmt(); !retryable(err) {
			break
		}
		select {
		case <-time.After(time.Duration(1+rand.IntN(5<<try)) * time.Millisecond):
		case <-ctx.Done():
			return unavailable(ctx, op, err)
		}
	}
	if err != nil {
		return unavailable(ctx, op, err)
	}
	return nil
}

// retryable reports a deadlock or a lock wait timeout.
func retryable(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && (me.Number == 1213 || me.Number == 1205)
}

// unavailable wraps err, a failure to reach the server or to get its
// answer, in backends.ErrUnavailable (or ErrInvalid if the db was closed,
// or the tables are missing: no retry cures those), and in ctx's error
// too when ctx ended. A conflict is passed on as it is.
func unavailable(ctx context.Context, op string, err error) error {
	if errors.Is(err, record.ErrConflict) {
		return err
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) && (me.Number == 1146 || me.Number == 1305) {
		return fmt.Errorf("%w: mysql: %s: %w (run mysql.Migrate first)", errInvalid, op, err)
	}
	if err.Error() == "sql: database is closed" {
		return fmt.Errorf("%w: mysql: %s: %w (the caller closed the db)", errInvalid, op, err)
	}
	cerr := ctxerr.Of(ctx, err)
	if cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w: mysql: %s: %w (%w)", backends.ErrUnavailable, op, err, cerr)
	}
	return fmt.Errorf("%w: mysql: %s: %w", backends.ErrUnavailable, op, err)
}
