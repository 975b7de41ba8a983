// Package mysqldial registers the URL schemes mysql:// and mariadb:// with
// package dial, so that dial.Open opens a MySQL or MariaDB backend
// (package backends/mysql) on a *sql.DB of its own. Import it for its side
// effect:
//
//	import _ "github.com/hustings/hustings/backends/mysql/mysqldial"
//
// The URL names a user, one server and a database; its parameters are
// go-sql-driver/mysql's (such as tls or timeout), and parseTime is always
// on:
//
//	mysql://user[:password]@host:port/db[?param=value…]
//
// Open waits for one connection (the driver's dial timeout is Open's) and
// runs mysql.Migrate (idempotent): the tables are made on first use. The
// driver's log lines go to dial.WithLogger's logger at debug level.
package mysqldial

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/dial"
	"github.com/hustings/hustings/backends/internal/record"
	"github.com/hustings/hustings/backends/mysql"
)

// The errors of Register are recorded by dial, which refuses the scheme
// at Parse: nothing to do with them here.
func init() {
	_ = dial.Register("mysql", opener{})
	_ = dial.Register("mariadb", opener{})
}

// opener opens mysql:// and mariadb:// URLs.
type opener struct{}

func (opener) Usage(scheme string) string {
	if scheme != "mysql" {
		return "" // an alias
	}
	return "mysql://user@host:port/db"
}

func (opener) Check(u *url.URL) error {
	_, err := describe(u)
	return err
}

func (opener) Describe(u *url.URL) (dial.Target, error) { return describe(u) }

// describe checks a mysql:// URL: a user, one host:port, a database, and
// parameters that go-sql-driver/mysql takes.
func describe(u *url.URL) (dial.Target, error) {
	switch {
	case u.Opaque != "":
		return dial.Target{}, fmt.Errorf("no // after %q: write mysql://user@host:port/db", u.Scheme+":")
	case u.User == nil || u.User.Username() == "":
		return dial.Target{}, errors.New("no user: write mysql://user[:password]@host:port/db")
	case strings.Trim(u.Path, "/") == "" || strings.Contains(strings.Trim(u.Path, "/"), "/"):
		return dial.Target{}, errors.New("no database: write mysql://user@host:port/db")
	case u.Fragment != "":
		return dial.Target{}, errors.New("fragments are not supported")
	}
	hs, err := dial.Hosts(u.Host)
	if err != nil {
		return dial.Target{}, err
	}
	if len(hs) != 1 {
		return dial.Target{}, errors.New("one host:port only")
	}
	m := *u
	m.Scheme = "mysql"
	t := dial.Target{Scheme: "mysql", Hosts: hs, DSN: m.String()}
	if _, err := config(&m); err != nil {
		return dial.Target{}, err
	}
	return t, nil
}

// config returns the go-sql-driver/mysql configuration of a mysql:// URL,
// with parseTime on.
func config(u *url.URL) (*gomysql.Config, error) {
	dsn := u.User.Username()
	if pw, ok := u.User.Password(); ok {
		dsn += ":" + pw
	}
	dsn += "@tcp(" + u.Host + ")/" + strings.Trim(u.Path, "/")
	if u.RawQuery != "" {
		dsn += "?" + u.RawQuery
	}
	c, err := gomysql.ParseDSN(dsn)
	if err != nil {
		return nil, errors.New("not a MySQL URL: " + strings.ReplaceAll(err.Error(), dsn, "…"))
	}
	c.ParseTime = true
	return c, nil
}

func (opener) Open(ctx context.Context, u *url.URL, c dial.Config) (backends.Backend, func(), error) {
	shown := u.Redacted()
	if _, err := describe(u); err != nil {
		return nil, nil, fmt.Errorf("%w %q: %v", dial.ErrURL, shown, err)
	}
	mc, err := config(u)
	if err != nil {
		return nil, nil, fmt.Errorf("dial: %s: %w", shown, err)
	}
	mc.Timeout = c.Timeout
	mc.Logger = logger{c.Logger.With("client", "mysql")}
	conn, err := gomysql.NewConnector(mc)
	if err != nil {
		return nil, nil, fmt.Errorf("dial: %s: %w", shown, err)
	}
	db := sql.OpenDB(conn)
	closeDB := func() { _ = db.Close() }
	if err := db.PingContext(ctx); err != nil {
		closeDB()
		var me *gomysql.MySQLError
		if errors.As(err, &me) { // the server answered, with an error
			return nil, nil, fmt.Errorf("dial: %s: %w", shown, err)
		}
		return nil, nil, dial.Unreachable(ctx, c, shown, nil, err)
	}
	if err := mysql.Migrate(ctx, db); err != nil {
		closeDB()
		return nil, nil, fmt.Errorf("dial: %s: %w", shown, err)
	}
	b, err := mysql.New(db)
	if err != nil {
		closeDB()
		return nil, nil, err
	}
	return b, func() { closeDB(); record.WaitBounded(b.Store) }, nil
}

// logger sends go-sql-driver/mysql's lines to a slog.Logger at debug
// level.
type logger struct{ l *slog.Logger }

func (m logger) Print(v ...any) { m.l.Debug(fmt.Sprint(v...)) }
