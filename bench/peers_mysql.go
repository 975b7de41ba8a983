package main

import (
	"context"
	"database/sql"
	"fmt"
)

// mysqlPeers is the GET_LOCK loop Go services write by hand: a connection
// of the candidate's pool pinned for the section (GET_LOCK belongs to the
// connection), GET_LOCK(name, a year) on it (-1, MySQL's "forever",
// returned NULL on MariaDB 10.11 here), then RELEASE_LOCK. It is what
// github.com/sanketplus/go-mysql-lock does, which the module proxy this
// bench builds from does not serve.
func mysqlPeers(dsn string) []peer {
	return []peer{{
		name: "GET_LOCK",
		note: "GET_LOCK(name, a year) / RELEASE_LOCK on a connection of the candidate's pool, pinned for the section (go-mysql-lock's way; the module is not served by the proxy); no fencing token, released silently if the connection drops",
		open: func(ctx context.Context) (locker, error) {
			db, err := sql.Open("mysql", dsn)
			if err != nil {
				return nil, err
			}
			db.SetMaxOpenConns(8) // the most goroutines a workload runs on one candidate
			return getLocker{db: db}, nil
		},
	}}
}

type getLocker struct{ db *sql.DB }

// run pins a connection and waits in GET_LOCK on it, which the server
// wakes when the holder releases.
func (g getLocker) run(ctx context.Context, name string, cs func()) error {
	conn, err := g.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, 31536000)", name).Scan(&got); err != nil {
		return err
	}
	if got.Int64 != 1 {
		return fmt.Errorf("GET_LOCK(%q) = %v", name, got)
	}
	cs()
	var ok sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT RELEASE_LOCK(?)", name).Scan(&ok); err != nil {
		return err
	}
	if ok.Int64 != 1 {
		return fmt.Errorf("GET_LOCK %q was not held at release", name)
	}
	return nil
}

func (g getLocker) close() { _ = g.db.Close() }
