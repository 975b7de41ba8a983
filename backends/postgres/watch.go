package postgres

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/hustings/hustings/internal/validate"
)

// watchCheck is how long the listening connection waits for a
// notification before it asks the server something; an answer that does
// not come within as long ends every watch, so a cut link is noticed
// within twice this.
const watchCheck = 5 * time.Second

// Watch signals when the holder of name may have changed: the statements
// NOTIFY every acquire, release and Close on the schema's channel (the
// payload is the milliseconds the lock lives on, and its name), and a
// lock that expires with nobody telling (a crashed holder, a lease) is
// noticed by a timer set to the expiry last seen, which re-reads the row.
// It returns once the LISTEN is confirmed, so no change after Watch
// returned is missed. Signals coalesce in a buffer of one.
//
// Every watch of a Backend shares one connection, dialled with the
// listener configuration (see WithListener) and not taken from the pool,
// and one goroutine, which exist while at least one watch does: ten
// thousand waiting campaigns cost PostgreSQL one connection. The Backend
// closes the channel when ctx ends, or when that connection breaks (or
// the server does not answer within watchCheck): then every watch's
// channel is closed; watch again.
func (b *Backend) Watch(ctx context.Context, name string) (<-chan struct{}, error) {
	if err := validate.Name(name); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, unavailable(ctx, "watch", err)
	}
	w, r := b.hub.add(ctx, name)
	select {
	case <-r.ready:
		if r.err != nil {
			w.end()
			return nil, unavailable(ctx, "watch", r.err)
		}
		return w.ch, nil
	case <-ctx.Done():
		w.end()
		return nil, unavailable(ctx, "watch", ctx.Err())
	}
}

// hub multiplexes the watches of one Backend over one listening
// connection, served by one goroutine (listen.serve) per run.
type hub struct {
	b     *Backend
	mu    sync.Mutex
	run   *run                // nil while no watch exists
	names map[string]*watched // by lock name
}

// watched is what the hub knows of one watched lock.
type watched struct {
	subs map[*watch]struct{}
	due  time.Time // when to re-read the row; zero: never
}

// watch is one Watch call's channel. The hub closes ch exactly once, when
// it removes the watch.
type watch struct {
	h    *hub
	name string
	ch   chan struct{}
	stop func() bool // unregisters the ctx callback
}

// run is one life of the listening connection. ready is closed once the
// LISTEN is confirmed or failed (err then says why).
type run struct {
	ctx    context.Context
	cancel context.CancelFunc
	ready  chan struct{}
	err    error

	wmu  sync.Mutex
	wake context.CancelFunc // ends the current wait for a notification
}

// add registers a watch on name, starting a run if none exists.
func (h *hub) add(ctx context.Context, name string) (*watch, *run) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.run == nil {
		rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		h.run = &run{ctx: rctx, cancel: cancel, ready: make(chan struct{})}
		h.names = map[string]*watched{}
		go h.serve(h.run)
	}
	w := &watch{h: h, name: name, ch: make(chan struct{}, 1)}
	w.stop = context.AfterFunc(ctx, w.end)
	n := h.names[name]
	if n == nil {
		// Read the row at once: it may be held, with an expiry to watch.
		n = &watched{subs: map[*watch]struct{}{}, due: time.Now()}
		h.names[name] = n
		h.run.interrupt()
	}
	n.subs[w] = struct{}{}
	return w, h.run
}

// end removes w and closes its channel, and ends the run if it was the
// last watch. Calling it again does nothing.
func (w *watch) end() {
	h := w.h
	h.mu.Lock() // add sets w.stop under it; a ctx already done calls end at once
	defer h.mu.Unlock()
	if w.stop != nil {
		w.stop()
	}
	n := h.names[w.name]
	if n == nil {
		return
	}
	if _, in := n.subs[w]; !in {
		return // already ended, by its ctx or by a broken connection
	}
	delete(n.subs, w)
	close(w.ch)
	if len(n.subs) > 0 {
		return
	}
	delete(h.names, w.name)
	if len(h.names) == 0 {
		h.run.cancel() // serve sees it, closes the connection and returns
		h.run, h.names = nil, nil
	}
}

// interrupt ends the current wait for a notification, so that serve
// looks at the schedule again.
func (r *run) interrupt() {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	if r.wake != nil {
		r.wake()
	}
}

// serve dials the listening connection, LISTENs, and then turns
// notifications and expiries into signals until the run is cancelled or
// the connection breaks; then, if r is still the hub's, it ends every
// watch so that their owners watch again (and poll meanwhile).
func (h *hub) serve(r *run) {
	conn, err := h.listen(r.ctx)
	r.err = err
	close(r.ready)
	if err != nil {
		h.broken(r)
		return
	}
	defer conn.Close(context.Background())
	quiet := time.Now()
	for {
		due := h.dueNames(time.Now())
		if len(due) > 0 {
			if err := h.check(r.ctx, conn, due); err != nil {
				h.broken(r)
				return
			}
			quiet = time.Now()
			continue
		}
		if time.Since(quiet) >= watchCheck {
			if err := ping(r.ctx, conn); err != nil {
				h.broken(r)
				return
			}
			quiet = time.Now()
		}
		n, err := h.wait(r, conn, quiet.Add(watchCheck))
		switch {
		case r.ctx.Err() != nil:
			return
		case n != nil:
			h.deliver(n.Payload)
			quiet = time.Now()
		case err != nil && !isTimeout(err):
			h.broken(r)
			return
		}
	}
}

// listen dials the listening connection and LISTENs on the channel.
func (h *hub) listen(ctx context.Context) (*pgx.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*watchCheck)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, h.b.listen)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{h.b.t.channel}.Sanitize()); err != nil {
		_ = conn.Close(context.Background())
		return nil, err
	}
	return conn, nil
}

// wait waits for a notification until the earliest due time or until,
// whichever comes first, or until interrupted.
func (h *hub) wait(r *run, conn *pgx.Conn, until time.Time) (*pgconn.Notification, error) {
	if next := h.nextDue(); !next.IsZero() && next.Before(until) {
		until = next
	}
	ctx, cancel := context.WithDeadline(r.ctx, until)
	defer cancel()
	r.wmu.Lock()
	r.wake = cancel
	r.wmu.Unlock()
	if !h.nextDue().IsZero() && !h.nextDue().After(time.Now()) {
		return nil, context.Canceled // a watch came in meanwhile
	}
	n, err := conn.WaitForNotification(ctx)
	r.wmu.Lock()
	r.wake = nil
	r.wmu.Unlock()
	if err != nil && ctx.Err() != nil && r.ctx.Err() == nil {
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
// a signal, and the time the lock expires if nobody renews it.
func (h *hub) deliver(payload string) {
	left, name, ok := strings.Cut(payload, " ")
	msLeft, err := strconv.ParseInt(left, 10, 64)
	if !ok || err != nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	n := h.names[name]
	if n == nil {
		return
	}
	n.signal()
	n.due = time.Time{}
	if msLeft > 0 {
		n.due = time.Now().Add(time.Duration(msLeft) * time.Millisecond)
	}
}

func (n *watched) signal() {
	for w := range n.subs {
		select {
		case w.ch <- struct{}{}:
		default: // a signal is pending already
		}
	}
}

// dueNames returns the watched names whose rows are to be re-read.
func (h *hub) dueNames(now time.Time) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for name, n := range h.names {
		if !n.due.IsZero() && !n.due.After(now) {
			out = append(out, name)
		}
	}
	return out
}

// nextDue returns the earliest due time, or zero.
func (h *hub) nextDue() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	var next time.Time
	for _, n := range h.names {
		if !n.due.IsZero() && (next.IsZero() || n.due.Before(next)) {
			next = n.due
		}
	}
	return next
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
func (h *hub) check(ctx context.Context, conn *pgx.Conn, names []string) error {
	ctx, cancel := context.WithTimeout(ctx, watchCheck)
	defer cancel()
	rows, err := conn.Query(ctx, h.b.t.expand(checkSQL), names)
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
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, name := range names {
		n := h.names[name]
		if n == nil || n.due.IsZero() || n.due.After(now) {
			continue // gone, or a notification set it meanwhile
		}
		if ms, held := left[name]; held && ms > 0 {
			n.due = now.Add(time.Duration(ms) * time.Millisecond)
			continue
		}
		n.due = time.Time{}
		n.signal()
	}
	return nil
}

// broken ends every watch of r, unless the hub has ended r itself.
func (h *hub) broken(r *run) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.run != r {
		return // cancelled on purpose when the last watch ended
	}
	for _, n := range h.names {
		for w := range n.subs {
			w.stop()
			close(w.ch)
		}
	}
	r.cancel()
	h.run, h.names = nil, nil
}
