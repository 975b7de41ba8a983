package dial

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/mysql"
)

// openMySQL opens a *sql.DB of the URL, waits for one connection, and
// runs mysql.Migrate (idempotent): the tables are made on first use. The
// driver's log lines go to cfg's logger.
func (t Target) openMySQL(ctx context.Context, cfg config) (backends.Backend, func(), error) {
	mc, err := t.mysqlConfig()
	if err != nil {
		return nil, nil, fmt.Errorf("dial: %s: %w", t.Redacted(), err)
	}
	mc.Timeout = cfg.timeout
	mc.Logger = mysqlLogger{cfg.logger.With("client", "mysql")}
	conn, err := gomysql.NewConnector(mc)
	if err != nil {
		return nil, nil, fmt.Errorf("dial: %s: %w", t.Redacted(), err)
	}
	db := sql.OpenDB(conn)
	closeDB := func() { _ = db.Close() }
	if err := db.PingContext(ctx); err != nil {
		closeDB()
		var me *gomysql.MySQLError
		if errors.As(err, &me) { // the server answered, with an error
			return nil, nil, fmt.Errorf("dial: %s: %w", t.Redacted(), err)
		}
		return nil, nil, t.unreachable(ctx, cfg, nil, err)
	}
	if err := mysql.Migrate(ctx, db); err != nil {
		closeDB()
		return nil, nil, fmt.Errorf("dial: %s: %w", t.Redacted(), err)
	}
	b, err := mysql.New(db)
	if err != nil {
		closeDB()
		return nil, nil, err
	}
	return b, closeDB, nil
}

// mysqlLogger sends go-sql-driver/mysql's lines to a slog.Logger at debug
// level.
type mysqlLogger struct{ l *slog.Logger }

func (m mysqlLogger) Print(v ...any) { m.l.Debug(fmt.Sprint(v...)) }
