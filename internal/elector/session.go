package elector

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
)

// Session is one candidate's session on a backend, shared by many
// electors: one keep-alive round trip per tick renews every lock they hold.
// Its Run keeps the session alive and opens a new one when it is lost;
// electors read its state and are woken when it changes, and take turns
// for their backend calls (calls). Package campaign documents it for
// users.
type Session struct {
	backend backends.Backend
	cfg     Config
	calls   *limiter // the electors' backend calls in flight; not the keep-alive
	opens   int      // Opens failed in a row, for the backoff; Run's own

	mu        sync.Mutex
	cur       shared
	changed   chan struct{}     // closed and replaced at every change
	lost      chan uint64       // electors report a generation they found lost
	claims    map[string]bool   // lock names electors on the session run for
	orphans   map[string]orphan // locks left held by a failed release, by name
	claimed   int               // electors running on the session, each with its names claimed
	actors    map[*actor]bool   // the campaigns among them, told of every change
	untold    bool              // a change the campaigns have not all been told of
	expiry    expiry            // tells the campaigns when a renewal's deadline comes
	telling   bool              // tell is running
	tellers   sync.WaitGroup    // tell
	unclaimed chan struct{}     // signalled (buffer 1) when one gives its names back
	renewing  bool              // a keep-alive is in flight
	phase     sessionPhase
	quit      chan struct{} // closed by Close, to stop Run's loop
	done      chan struct{} // closed once Run has returned, or by a Close that came before Run
}

// sessionPhase is how far a Session is: new (Run not called yet),
// running, stopping (its electors end their terms and leave: Close was
// called, or Run's loop ended) and closed (Run has returned, or Close came
// before Run). A session runs once: the backend's session is gone after.
type sessionPhase uint8

const (
	sessionNew sessionPhase = iota
	sessionRunning
	sessionStopping
	sessionClosed
)

// orphan is a lock an elector could not release on the shared session; the
// session releases it at its next successful renewal.
type orphan struct {
	token events.Token
	gen   uint64
}

// shared is the state electors read: the session, the start of its last
// successful Open or KeepAlive, and a generation that changes with the
// session.
type shared struct {
	sess    backends.Session
	renewed time.Time
	gen     uint64
	closing bool  // the session is stopping (see sessionPhase); made by snapshot
	fatal   error // with closing: the error no retry cures that stopped it
	failing error // the last keep-alive's error; nil after a success
}

// NewSession validates the options (ID, TTL, keep-alive, retry) and
// starts nothing.
func NewSession(b backends.Backend, opts ...Option) (*Session, error) {
	if err := CheckBackend(b); err != nil {
		return nil, err
	}
	cfg := NewConfig(opts)
	if err := errors.Join(cfg.Refuse(ForSession), cfg.ValidateElector()); err != nil {
		return nil, err
	}
	return newSession(b, cfg), nil
}

// newSession returns a session with a validated configuration.
func newSession(b backends.Backend, cfg Config) *Session {
	cfg.Session = nil
	return &Session{
		backend: b, cfg: cfg,
		calls:     newLimiter(callsInFlight, cfg.renewalSlack()/4),
		changed:   make(chan struct{}),
		lost:      make(chan uint64, 1),
		claims:    map[string]bool{},
		orphans:   map[string]orphan{},
		actors:    map[*actor]bool{},
		unclaimed: make(chan struct{}, 1),
		quit:      make(chan struct{}),
		done:      make(chan struct{}),
	}
}

// state returns the current state and a channel closed at its next change.
func (c *Session) state() (shared, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.snapshot(), c.changed
}

// snapshot returns the current state, closing included; c.mu held.
func (c *Session) snapshot() shared {
	s := c.cur
	s.closing = c.phase >= sessionStopping
	return s
}

// Backend returns the backend the session is on.
func (c *Session) Backend() backends.Backend { return c.backend }

// current returns the current state.
func (c *Session) current() shared {
	s, _ := c.state()
	return s
}

// health reports whether a keep-alive is in flight, and the last one's
// error, nil after a success.
func (c *Session) health() (renewing bool, failing error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.renewing, c.cur.failing
}

// report tells the session that an elector found session generation gen
// lost, so that it renews or replaces it at once.
func (c *Session) report(gen uint64) {
	select {
	case c.lost <- gen:
	default:
	}
}

// Run keeps the session alive until ctx ends or Close is called, then
// closes it, which frees every lock its electors still hold. It returns
// ctx.Err(), ErrClosed after Close, ErrInvalid (wrapping the backend's
// error) when the backend refuses to open the session, which no retry
// cures, and ErrInvalid or ErrClosed if called again.
func (c *Session) Run(ctx context.Context) error {
	if err := CheckContext(ctx); err != nil {
		return err
	}
	c.mu.Lock()
	switch c.phase {
	case sessionNew:
		c.phase = sessionRunning
	case sessionRunning:
		c.mu.Unlock()
		return errRunning
	default:
		c.mu.Unlock()
		return ErrClosed
	}
	c.mu.Unlock()
	defer close(c.done)
	err := c.loop(ctx)
	var fatal error
	if errors.Is(err, ErrInvalid) {
		fatal = err
	}
	c.stop(fatal)
	c.mu.Lock()
	c.expiry.stop()
	c.mu.Unlock()
	c.tellers.Wait()
	c.mu.Lock()
	c.phase = sessionClosed
	c.mu.Unlock()
	return err
}

// loop opens the session, renews it every keep-alive interval, and opens a
// new one when it is lost.
func (c *Session) loop(ctx context.Context) error {
	next := time.Now()
	for {
		timer := time.NewTimer(time.Until(next))
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-c.quit:
			timer.Stop()
			return ErrClosed
		case gen := <-c.lost:
			timer.Stop()
			if cur, _ := c.state(); gen != cur.gen || cur.sess == nil {
				continue // already replaced
			}
		case <-c.losses():
			timer.Stop()
			cur, _ := c.state()
			c.set(cur) // the electors look at Lost
			continue
		case <-timer.C:
		}
		var fatal error
		if next, fatal = c.tick(ctx); fatal != nil {
			return fatal
		}
	}
}

// tick opens or renews the session and returns when to tick again, or an
// error that no retry can cure: the backend refuses the configuration (a
// TTL over ZooKeeper's session timeout, say) or its client was closed.
func (c *Session) tick(ctx context.Context) (time.Time, error) {
	cur, _ := c.state()
	start := time.Now()
	cctx, cancel := context.WithTimeout(ctx, c.cfg.TTL)
	defer cancel()
	if cur.sess == nil {
		s, err := c.backend.Open(cctx, c.cfg.ID, c.cfg.TTL)
		if errors.Is(err, backends.ErrInvalid) {
			c.cfg.Logger.Error("open session refused", "id", c.cfg.ID, "err", err)
			return time.Time{}, Invalid(err)
		}
		if err != nil {
			c.opens++
			c.cfg.Logger.Warn("open session failed", "id", c.cfg.ID, "err", err)
			return time.Now().Add(c.cfg.Backoff(c.opens)), nil
		}
		c.opens = 0
		c.set(shared{sess: s, renewed: start, gen: cur.gen + 1})
		return start.Add(c.cfg.KeepAlive), nil
	}
	c.mu.Lock()
	c.renewing = true
	c.mu.Unlock()
	err := cur.sess.KeepAlive(cctx)
	c.mu.Lock()
	c.renewing = false
	c.mu.Unlock()
	c.cfg.Hooks.KeepAlive(BackendLabel(c.backend), time.Since(start), err)
	switch {
	case err == nil:
		renewed := shared{sess: cur.sess, renewed: start, gen: cur.gen}
		if cur.failing != nil || len(cur.sess.Lost()) > 0 {
			c.set(renewed) // the campaigns hear of a recovery, and look at Lost
		} else {
			c.renew(renewed)
		}
		c.releaseOrphans(cctx, cur)
		return start.Add(c.cfg.KeepAlive), nil
	case errors.Is(err, backends.ErrSessionLost), errors.Is(err, backends.ErrSessionClosed):
		c.cfg.Logger.Warn("session lost", "id", c.cfg.ID, "err", err)
		c.set(shared{gen: cur.gen + 1})
		c.closeSession(cur.sess)
		return time.Now(), nil
	default:
		c.cfg.Logger.Warn("keep-alive failed", "id", c.cfg.ID, "err", err)
		cur.failing = err
		c.set(cur)
		return time.Now().Add(c.cfg.RetryPause()), nil
	}
}

// losses returns the current session's pushed lock losses, or nil.
func (c *Session) losses() <-chan struct{} {
	cur, _ := c.state()
	if cur.sess == nil {
		return nil
	}
	return cur.sess.Losses()
}

// stop asks the electors on the session to end their terms gracefully
// and leave, waits for them (bounded by the grace period and the TTL), and
// only then closes the session, which frees whatever is still held. fatal
// is the error no retry cures that stopped Run, if any.
func (c *Session) stop(fatal error) {
	c.mu.Lock()
	c.phase = sessionStopping
	c.mu.Unlock()
	cur, _ := c.state()
	cur.fatal = fatal
	c.set(cur)
	limit := time.NewTimer(c.cfg.Grace + c.cfg.TTL)
	defer limit.Stop()
	for c.claimants() > 0 {
		select {
		case <-c.unclaimed:
		case <-limit.C:
			c.cfg.Logger.Warn("campaigns still running on a closed session", "id", c.cfg.ID, "campaigns", c.claimants())
			c.closeAndForget(cur)
			return
		}
	}
	c.closeAndForget(cur)
}

func (c *Session) closeAndForget(cur shared) {
	c.set(shared{gen: cur.gen + 1, fatal: cur.fatal})
	if cur.sess != nil {
		c.closeSession(cur.sess)
	}
}

func (c *Session) closeSession(s backends.Session) {
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.TTL)
	defer cancel()
	_ = s.Close(ctx)
}

// Close stops Run and waits for it to return. Calling it again, or before
// Run, is fine; Run then returns ErrClosed, and so do the Runs of electors
// on the session.
func (c *Session) Close() error {
	c.mu.Lock()
	phase := c.phase
	switch phase {
	case sessionNew:
		c.phase = sessionClosed
		close(c.done) // no Run will
	case sessionRunning:
		c.phase = sessionStopping
		close(c.quit)
	}
	c.mu.Unlock()
	if phase == sessionNew {
		c.set(c.current()) // the electors that claimed names meanwhile leave
		c.tellers.Wait()
	}
	<-c.done
	return nil
}

// same reports whether a and b are the same backend; backends of types
// that cannot be compared are taken on trust.
func same(a, b backends.Backend) (eq bool) {
	defer func() {
		if recover() != nil {
			eq = true
		}
	}()
	return a == b
}

// await returns the session's state once it has a backend session open,
// waiting at most limit (a backend that cannot open one is a failure) or
// until ctx ends. It returns ErrClosed once the session is closing.
func (s *Session) await(ctx context.Context, limit time.Duration) (shared, error) {
	var timer *time.Timer // made only if the run has to wait
	for {
		cur, changed := s.state()
		switch {
		case cur.closing:
			return cur, ErrClosed
		case cur.sess != nil:
			return cur, nil
		case timer == nil:
			timer = time.NewTimer(limit)
			defer timer.Stop()
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return cur, ctx.Err()
		case <-timer.C:
			return cur, fmt.Errorf("campaign: the session has no backend session open after %v: %w", limit, backends.ErrUnavailable)
		}
	}
}
