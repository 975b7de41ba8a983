package postgres

// A watched lock's row is marked (watched_until): acquires, releases and
// Closes NOTIFY only while the row they write is marked. Watch marks it
// before the watch begins; the listening connection marks every watched
// row again each markEvery, and again at once a row that an acquire
// inserted (it lost any mark).

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/hustings/hustings/backends/internal/hub"
)

// markTTL is how long a mark of a watched lock row lasts (watched_until);
// the listener marks every watched name again each markEvery, and Watch
// writes no mark where this Backend wrote one less than markEvery ago.
const (
	markTTL   = 3 * time.Minute
	markEvery = time.Minute
)

// markSQL marks the rows of names ($1) watched for $2 ms, inserting a
// free row for a name that has none. It waits for the row locks of
// writers in flight, and of fenced transactions.
const markSQL = `INSERT INTO {locks} AS l (name, session_id, candidate, token, expires_at, watched_until)
SELECT n, '', '', 0, '-infinity', clock_timestamp() + $2::bigint * interval '1 millisecond' FROM unnest($1::text[]) n
ON CONFLICT (name) DO UPDATE SET watched_until = GREATEST(l.watched_until, excluded.watched_until)`

// refreshSQL is markSQL for the listener's marks: it skips a row that a
// writer or a fenced transaction has locked (it keeps its earlier mark,
// which lasts past the next refresh), so that the listening connection
// never waits behind a transaction. It returns the names it marked.
const refreshSQL = `WITH u AS (
  UPDATE {locks} l SET watched_until = GREATEST(l.watched_until, clock_timestamp() + $2::bigint * interval '1 millisecond')
  WHERE l.name IN (SELECT name FROM {locks} WHERE name = ANY($1::text[]) FOR NO KEY UPDATE SKIP LOCKED)
  RETURNING l.name
), i AS (
  INSERT INTO {locks} (name, session_id, candidate, token, expires_at, watched_until)
  SELECT n, '', '', 0, '-infinity', clock_timestamp() + $2::bigint * interval '1 millisecond' FROM unnest($1::text[]) n
  WHERE NOT EXISTS (SELECT 1 FROM {locks} WHERE name = n)
  ON CONFLICT (name) DO NOTHING
  RETURNING name
)
SELECT name FROM u UNION ALL SELECT name FROM i`

// remarkPause is how soon the listener tries to mark again a row it found
// inserted (see deliver) that a transaction had locked; it doubles while
// no try marks anything, up to maxRemarkPause.
const (
	remarkPause    = 10 * time.Millisecond
	maxRemarkPause = time.Second
)

// mark makes sure name's row is marked watched before the watch begins:
// a release that commits after mark returned NOTIFYs. One statement,
// unless this Backend marked it less than markEvery ago.
func (b *Backend) mark(ctx context.Context, name string) error {
	start := time.Now()
	b.mu.Lock()
	fresh := b.marked[name].After(start.Add(markTTL - markEvery))
	b.mu.Unlock()
	if fresh {
		return nil
	}
	var err error
	for range 2 {
		// Once more on another connection if this one broke: after a
		// restart of the server the pool's first statements fail, and a
		// failed Watch leaves its campaign polling. markSQL is idempotent.
		err = b.run(ctx, "watch", func() error {
			_, err := b.pool.Exec(ctx, b.t.mark, []string{name}, ms(markTTL))
			return err
		})
		var pe *pgconn.PgError
		if err == nil || ctx.Err() != nil || errors.As(err, &pe) {
			break
		}
	}
	if err != nil {
		return err
	}
	b.mu.Lock()
	if b.marked == nil {
		b.marked = make(map[string]time.Time)
	}
	b.marked[name] = start.Add(markTTL)
	b.mu.Unlock()
	return nil
}

// forget drops what mark remembers: a new listening connection may follow
// a crash of the server, which took the marks with the locks table.
func (b *Backend) forget() {
	b.mu.Lock()
	b.marked = nil
	b.mu.Unlock()
}

// refresh marks every watched name's row again (see markTTL).
func (l *listener) refresh(ctx context.Context, r *hub.Run, conn *pgx.Conn) error {
	var names []string
	l.h.With(r, func(v hub.View[watched]) {
		for name := range v.All() {
			names = append(names, name)
		}
	})
	_, err := l.mark(ctx, conn, names)
	return err
}

// remark marks the rows in lost again, and forgets those it marked and
// those no longer watched; a row locked by a transaction stays for the
// next try.
func (l *listener) remark(ctx context.Context, r *hub.Run, conn *pgx.Conn, lost map[string]bool) error {
	names := make([]string, 0, len(lost))
	l.h.With(r, func(v hub.View[watched]) {
		for name := range lost {
			if v.State(name) == nil {
				delete(lost, name)
			} else {
				names = append(names, name)
			}
		}
	})
	marked, err := l.mark(ctx, conn, names)
	for _, name := range marked {
		delete(lost, name)
	}
	return err
}

// mark marks the rows of names watched on the listening connection
// (refreshSQL), within watchCheck, and returns the names it marked.
func (l *listener) mark(ctx context.Context, conn *pgx.Conn, names []string) ([]string, error) {
	if len(names) == 0 {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, watchCheck)
	defer cancel()
	rows, err := conn.Query(ctx, l.b.t.refresh, names, ms(markTTL))
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
