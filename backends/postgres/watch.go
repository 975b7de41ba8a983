package postgres

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/hustings/hustings/backends/internal/hub"
	"github.com/hustings/hustings/internal/validate"
)

// watchCheck is how long the listening connection waits for a
// notification before it asks the server something; an answer that does
// not come within as long ends every watch, so a cut link is noticed
// within twice this.
const watchCheck = 5 * time.Second

// Watch signals when the holder of name may have changed: it marks the
// lock's row watched (watched_until, one statement that inserts a free
// row if there is none, skipped if this Backend marked it less than a
// minute ago), and the statements NOTIFY every acquire, release and Close
// of a watched row on the schema's channel (the payload is the
// milliseconds the lock lives on, and its name); a lock that expires with
// nobody telling (a crashed holder, a lease) is noticed by a timer set to
// the expiry last seen, which re-reads the row. It returns once the mark
// is committed and the LISTEN is confirmed, so no change after Watch
// returned is missed. Signals coalesce in a buffer of one. The listening
// connection marks every watched row again each minute; a mark lasts
// three.
//
// Every watch of a Backend shares one connection, dialled with the
// listener configuration (see WithListener) and not taken from the pool,
// and one goroutine, which exist while at least one watch does: ten
// thousand waiting campaigns cost PostgreSQL one connection. The Backend
// closes the channel when ctx ends, or when that connection breaks (or
// the server does not answer within watchCheck): then every watch's
// channel is closed; watch again.
func (b *Backend) Watch(ctx context.Context, name string) (<-chan struct{}, error) {
	return b.watch(ctx, name, hub.AllKinds)
}

// WatchReleases is Watch for a candidate waiting for name: it signals
// only the changes that may free the lock (a release without a hold, a
// Close of the holder's session, an expiry the listener's timer finds,
// the end of a hold), not a take, nor a release with a hold (the lock is
// not free until the hold ends).
func (b *Backend) WatchReleases(ctx context.Context, name string) (<-chan struct{}, error) {
	return b.watch(ctx, name, freed)
}

// The kinds of the hub's signals: a change that leaves the lock held (by
// a session, or by nobody alive for a hold), and one that may have freed
// it (all WatchReleases wakes for).
const (
	taken hub.Kinds = 1 << iota
	freed
)

func (b *Backend) watch(ctx context.Context, name string, k hub.Kinds) (<-chan struct{}, error) {
	if err := validate.Name(name); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, unavailable(ctx, "watch", err)
	}
	if err := b.mark(ctx, name); err != nil {
		return nil, err
	}
	w, err := b.hub.WatchOnly(ctx, name, k)
	if err != nil {
		return nil, unavailable(ctx, "watch", err)
	}
	return w.C(), nil
}

// watched is what the hub knows of one watched lock.
type watched struct {
	read bool      // its row was read, or a notification told its expiry
	due  time.Time // when to re-read its row; zero: never (once read)
}

// dueAt reports when n is due: at once if never read.
func (n *watched) dueAt() (time.Time, bool) {
	if !n.read {
		return time.Time{}, true
	}
	return n.due, !n.due.IsZero()
}

// listener is the transport of a Backend's watch hub: one listening
// connection per run, served by the run's goroutine.
type listener struct {
	b *Backend
	h *hub.Hub[watched]
}

// newHub returns the watch hub of b.
func newHub(b *Backend) *hub.Hub[watched] {
	l := &listener{b: b}
	l.h = hub.New(hub.Config[watched]{Open: l.open, Due: (*watched).dueAt})
	return l.h
}

func (l *listener) open(ctx context.Context, r *hub.Run) func() error {
	return func() error { return l.serve(ctx, r) }
}

// serve dials the listening connection, LISTENs, and then turns
// notifications and expiries into signals until ctx ends or the
// connection breaks (or the server does not answer within watchCheck).
func (l *listener) serve(ctx context.Context, r *hub.Run) error {
	conn, err := l.listen(ctx)
	r.Ready(err)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	defer l.b.forget()
	quiet, marked := time.Now(), time.Now()
	lost := make(map[string]bool) // rows inserted since their marks were written
	var remarked time.Time
	pause := remarkPause
	for {
		if len(lost) > 0 && time.Since(remarked) >= pause {
			n := len(lost)
			if err := l.remark(ctx, r, conn, lost); err != nil {
				return err
			}
			if len(lost) == n {
				pause = min(2*pause, maxRemarkPause)
			}
			quiet, remarked = time.Now(), time.Now()
			continue
		}
		if time.Since(marked) >= markEvery {
			if err := l.refresh(ctx, r, conn); err != nil {
				return err
			}
			quiet, marked = time.Now(), time.Now()
			continue
		}
		if due := l.h.Due(r, time.Now()); len(due) > 0 {
			if err := l.check(ctx, r, conn, due); err != nil {
				return err
			}
			quiet = time.Now()
			continue
		}
		if time.Since(quiet) >= watchCheck {
			if err := ping(ctx, conn); err != nil {
				return err
			}
			quiet = time.Now()
		}
		until := quiet.Add(watchCheck)
		if len(lost) > 0 {
			until = remarked.Add(pause)
		}
		n, err := l.wait(ctx, r, conn, until)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case n != nil:
			if name, inserted := l.deliver(r, n.Payload); inserted {
				// The row was inserted: mark it again before the next
				// release, which would not NOTIFY without it.
				lost[name], pause = true, remarkPause
			}
			quiet = time.Now()
		case err != nil && !isTimeout(err):
			return err
		}
	}
}

// listen dials the listening connection and LISTENs on the channel.
func (l *listener) listen(ctx context.Context) (*pgx.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*watchCheck)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, l.b.listen)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{l.b.t.channel}.Sanitize()); err != nil {
		_ = conn.Close(context.Background())
		return nil, err
	}
	return conn, nil
}

// wait waits for a notification until the earliest due time or until,
// whichever comes first, or until a new watch pokes the run.
func (l *listener) wait(ctx context.Context, r *hub.Run, conn *pgx.Conn, until time.Time) (*pgconn.Notification, error) {
	if next, ok := l.h.Next(r); ok && next.Before(until) {
		until = next
	}
	wctx, stop := r.Until(until)
	defer stop()
	n, err := conn.WaitForNotification(wctx)
	if err != nil && wctx.Err() != nil && ctx.Err() == nil {
		return nil, context.DeadlineExceeded // woken or timed out: not a failure
	}
	return n, err
}

// isTimeout reports an error of a wait that ended by its deadline.
func isTimeout(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

// ping asks the server for an answer within watchCheck.
func ping(ctx context.Context, conn *pgx.Conn) error {
	ctx, cancel := context.WithTimeout(ctx, watchCheck)
	defer cancel()
	return conn.Ping(ctx)
}

// deliver hands one notification, "<ms> <name>", to the watches of name:
// a signal, and the time the lock expires if nobody renews it. It reports
// name as lost if the ms are signed '+' (an acquire inserted the row,
// which has lost any mark: see acquireSQL) and name is watched here.
func (l *listener) deliver(r *hub.Run, payload string) (name string, lost bool) {
	left, name, ok := strings.Cut(payload, " ")
	msLeft, err := strconv.ParseInt(left, 10, 64)
	if !ok || err != nil {
		return "", false
	}
	l.h.With(r, func(v hub.View[watched]) {
		n := v.State(name)
		if n == nil {
			return
		}
		lost = strings.HasPrefix(left, "+")
		k := taken
		if msLeft == 0 {
			k = freed // a release without a hold, or a Close
		}
		v.SignalKinds(name, k)
		n.read, n.due = true, time.Time{}
		if msLeft > 0 {
			n.due = time.Now().Add(time.Duration(msLeft) * time.Millisecond)
		}
	})
	return name, lost
}

// checkSQL reads how long each of a list of live locks lives on unless
// renewed: a lock held by a session until the session's expiry (or its
// lease's end if sooner), a lock released with a hold until the hold's.
const checkSQL = `SELECT l.name, ceil(extract(epoch FROM
    CASE WHEN l.hold THEN l.expires_at ELSE LEAST(l.expires_at, s.expires_at) END - clock_timestamp()) * 1000)::bigint
FROM {locks} l LEFT JOIN {sessions} s ON s.id = l.session_id
WHERE l.name = ANY($1) AND l.expires_at > clock_timestamp() AND (l.hold OR s.expires_at > clock_timestamp())`

// check re-reads the rows of names, all due: a lock still held is looked
// at again when it expires as now seen; a lock free or expired signals.
func (l *listener) check(ctx context.Context, r *hub.Run, conn *pgx.Conn, names []string) error {
	ctx, cancel := context.WithTimeout(ctx, watchCheck)
	defer cancel()
	rows, err := conn.Query(ctx, l.b.t.expand(checkSQL), names)
	if err != nil {
		return err
	}
	left := make(map[string]int64, len(names))
	for rows.Next() {
		var name string
		var ms int64
		if err := rows.Scan(&name, &ms); err != nil {
			rows.Close()
			return err
		}
		left[name] = ms
	}
	if err := rows.Err(); err != nil {
		return err
	}
	now := time.Now()
	l.h.With(r, func(v hub.View[watched]) {
		for _, name := range names {
			n := v.State(name)
			if n == nil {
				continue // gone meanwhile
			}
			if at, due := n.dueAt(); !due || at.After(now) {
				continue // a notification set it meanwhile
			}
			n.read, n.due = true, time.Time{}
			if ms, held := left[name]; held && ms > 0 {
				n.due = now.Add(time.Duration(ms) * time.Millisecond)
				continue
			}
			v.Signal(name)
		}
	})
	return nil
}
