// Package pgdial registers the URL schemes postgres:// and postgresql://
// with package dial, so that dial.Open opens a PostgreSQL backend (package
// backends/postgres) on a pgx pool of its own. Import it for its side
// effect:
//
//	import _ "github.com/hustings/hustings/backends/postgres/pgdial"
//
// The URL is pgx's, user, password and parameters such as sslmode
// included; it must name a host and a port (a Unix socket is not
// supported here):
//
//	postgres://[user[:password]@]host:port/db[?param=value…]
//
// Open makes a pool, waits for one connection (pgx's connect timeout is
// the dial timeout), and runs postgres.Migrate (idempotent): the tables are
// made on first use. Behind a transaction pooler, whose LISTEN does not
// work, build the pool yourself and call postgres.New with
// postgres.WithListener.
package pgdial

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/dial"
	"github.com/hustings/hustings/backends/postgres"
)

// The errors of Register are recorded by dial, which refuses the scheme
// at Parse: nothing to do with them here.
func init() {
	_ = dial.Register("postgres", opener{})
	_ = dial.Register("postgresql", opener{})
}

// opener opens postgres:// and postgresql:// URLs.
type opener struct{}

func (opener) Usage(scheme string) string {
	if scheme != "postgres" {
		return "" // an alias
	}
	return "postgres://[user@]host:port/db"
}

func (opener) Check(u *url.URL) error {
	_, err := describe(u)
	return err
}

func (opener) Describe(u *url.URL) (dial.Target, error) { return describe(u) }

// describe checks a PostgreSQL URL the way pgx reads it, without
// connecting.
func describe(u *url.URL) (dial.Target, error) {
	dsn := u.String() // url.Parse wrote the scheme in lower case, as pgx wants it
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		msg := err.Error()
		if inner := errors.Unwrap(err); inner != nil {
			msg = inner.Error() // without the URL
		}
		msg = strings.ReplaceAll(msg, "\n", " ")
		if len(msg) > 200 {
			msg = msg[:200] + "…"
		}
		return dial.Target{}, errors.New("not a PostgreSQL URL: " + strings.ToValidUTF8(msg, "?"))
	}
	host := cfg.ConnConfig.Host
	if host == "" || strings.HasPrefix(host, "/") {
		return dial.Target{}, errors.New("no host:port (a Unix socket is not supported here)")
	}
	t := dial.Target{Scheme: "postgres", Hosts: []string{net.JoinHostPort(host, strconv.Itoa(int(cfg.ConnConfig.Port)))}, DSN: dsn}
	for _, f := range cfg.ConnConfig.Fallbacks { // with and without TLS: one host twice
		if h := net.JoinHostPort(f.Host, strconv.Itoa(int(f.Port))); !slices.Contains(t.Hosts, h) {
			t.Hosts = append(t.Hosts, h)
		}
	}
	return t, nil
}

func (opener) Open(ctx context.Context, u *url.URL, c dial.Config) (backends.Backend, func(), error) {
	shown := u.Redacted()
	t, err := describe(u)
	if err != nil {
		return nil, nil, fmt.Errorf("%w %q: %v", dial.ErrURL, shown, err)
	}
	pcfg, err := pgxpool.ParseConfig(t.DSN)
	if err != nil {
		return nil, nil, fmt.Errorf("dial: %s: %w", shown, err)
	}
	pcfg.ConnConfig.ConnectTimeout = c.Timeout
	pool, err := pgxpool.NewWithConfig(context.WithoutCancel(ctx), pcfg)
	if err != nil {
		return nil, nil, fmt.Errorf("dial: %s: %w", shown, err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		var pe *pgconn.PgError
		if errors.As(err, &pe) { // the server answered, with an error
			return nil, nil, fmt.Errorf("dial: %s: %w", shown, err)
		}
		return nil, nil, dial.Unreachable(ctx, c, shown, nil, oneLine{err})
	}
	if err := postgres.Migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, nil, fmt.Errorf("dial: %s: %w", shown, err)
	}
	b, err := postgres.New(pool)
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	return b, pool.Close, nil
}

// oneLine is an error whose message (pgx lists each address it tried on
// a line of its own) is one line.
type oneLine struct{ err error }

func (o oneLine) Error() string {
	return strings.Join(strings.Fields(strings.ReplaceAll(o.err.Error(), "\n", "; ")), " ")
}

func (o oneLine) Unwrap() error { return o.err }
