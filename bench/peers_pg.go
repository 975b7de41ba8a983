package main

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// pgPeers is the advisory-lock loop most Go services write by hand: a
// blocking pg_advisory_lock on a connection pinned per candidate (advisory
// locks belong to the connection), then pg_advisory_unlock.
// (cirello.io/pglock, the other peer, is not served by the
// module proxy this bench builds from.)
func pgPeers(dsn string) []peer {
	return []peer{{
		name: "advisory lock",
		note: "pg_advisory_lock(hashtext(name)) / pg_advisory_unlock on a connection per candidate; no fencing token, no expiry",
		open: func(ctx context.Context) (locker, error) {
			conn, err := pgx.Connect(ctx, dsn)
			if err != nil {
				return nil, err
			}
			return advisoryLocker{conn: conn}, nil
		},
	}}
}

type advisoryLocker struct{ conn *pgx.Conn }

// run waits in pg_advisory_lock, which the server wakes when the holder
// unlocks.
func (a advisoryLocker) run(ctx context.Context, name string, cs func()) error {
	if _, err := a.conn.Exec(ctx, "SELECT pg_advisory_lock(hashtext($1))", name); err != nil {
		return err
	}
	cs()
	var ok bool
	if err := a.conn.QueryRow(ctx, "SELECT pg_advisory_unlock(hashtext($1))", name).Scan(&ok); err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("advisory lock %q was not held at unlock", name)
	}
	return nil
}

func (a advisoryLocker) close() { _ = a.conn.Close(context.Background()) }
