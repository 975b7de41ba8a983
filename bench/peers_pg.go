package main

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
)

// pgPeers is the advisory-lock loop most Go services write by hand: a
// connection taken from the service's pool and pinned for the section
// (advisory locks belong to the connection), a blocking pg_advisory_lock
// on it, then pg_advisory_unlock. A candidate's goroutines each pin one
// of its pool's connections: one pgx connection cannot serve two at once
// (the throughput rows at 8 goroutines failed with "conn busy" when the
// candidate had one).
// (cirello.io/pglock, the other peer, is not served by the
// module proxy this bench builds from.)
func pgPeers(dsn string) []peer {
	return []peer{{
		name: "advisory lock",
		note: "pg_advisory_lock(hashtext(name)) / pg_advisory_unlock on a connection of the candidate's pool, pinned for the section; no fencing token, no expiry",
		open: func(ctx context.Context) (locker, error) {
			cfg, err := pgxpool.ParseConfig(dsn)
			if err != nil {
				return nil, err
			}
			cfg.MaxConns = 8 // the most goroutines a workload runs on one candidate
			pool, err := pgxpool.NewWithConfig(ctx, cfg)
			if err != nil {
				return nil, err
			}
			return advisoryLocker{pool: pool}, nil
		},
	}}
}

type advisoryLocker struct{ pool *pgxpool.Pool }

// run pins a connection and waits in pg_advisory_lock on it, which the
// server wakes when the holder unlocks.
func (a advisoryLocker) run(ctx context.Context, name string, cs func()) error {
	conn, err := a.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock(hashtext($1))", name); err != nil {
		return err
	}
	cs()
	var ok bool
	if err := conn.QueryRow(ctx, "SELECT pg_advisory_unlock(hashtext($1))", name).Scan(&ok); err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("advisory lock %q was not held at unlock", name)
	}
	return nil
}

func (a advisoryLocker) close() { a.pool.Close() }
