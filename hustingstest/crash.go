// Package hustingstest helps test code that uses Hustings. Crashable
// simulates the crash of one candidate without stopping its process: it
// wraps a real backend for that candidate, and after Crash every call
// hangs until its context ends, so nothing is renewed and nothing
// released, and the server lets the candidate's session expire as it
// would after a kill or a freeze; Slow delays every call instead. It is
// not a fake backend: every call that goes through reaches the real one,
// so a test can run on any backend. Recorder checks a test's history of
// terms and writes by the rules the chaos suite checks (Tampered excuses
// the overlap a lock deleted behind its holder makes, as with
// memory.Backend's Delete and Expire). The package imports no test code,
// so programs (a demo) can use it too.
//
// docs/testing.md in the repository shows a failover test of a user's
// loop with both, in virtual time (testing/synctest).
package hustingstest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/validate"
	"github.com/hustings/hustings/strategy"
)

// Crashable is a real backend seen by one candidate that can crash.
// Create it with NewCrashable. It is safe for concurrent use.
type Crashable struct {
	b       backends.Backend
	refused chan struct{} // closed by Refuse

	mu      sync.Mutex
	crashed bool
	closed  bool                  // refused is closed
	slow    time.Duration         // added to every call, see Slow
	open    map[*session]struct{} // sessions not closed through, for Refuse
}

var _ backends.Backend = (*Crashable)(nil)

// NewCrashable wraps b; calls pass through until Crash. With a nil b
// (or a typed nil) every call fails with backends.ErrInvalid.
func NewCrashable(b backends.Backend) *Crashable {
	if validate.Nil(b) {
		b = nil // a typed nil too: gate refuses every call
	}
	return &Crashable{b: b, refused: make(chan struct{}), open: make(map[*session]struct{})}
}

// Crash makes every call from now on hang until its context ends, then fail
// with backends.ErrUnavailable. There is no undo: a crashed candidate is
// replaced by a new one, as after a restart.
func (c *Crashable) Crash() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.crashed = true
}

// Refuse crashes the candidate if it is not crashed yet, and makes every
// hanging call, and every later one, fail at once with
// backends.ErrUnavailable, as calls to a host that is gone fail once its
// port is closed. It is for tearing a crashed candidate down without
// waiting for its calls to time out: closing a crashed campaign otherwise
// waits up to a TTL for its session's close to give up. It also closes
// the candidate's sessions on the real backend (each within 10 s), as the
// end of a crashed process ends what it held in memory: their goroutines
// (a loss watch, say) stop, and a lock whose TTL has not run out yet is
// freed now, so call it once the test no longer needs the crash's
// failover to take a TTL.
func (c *Crashable) Refuse() {
	c.mu.Lock()
	c.crashed = true
	var open []*session
	if !c.closed {
		c.closed = true
		close(c.refused)
		for s := range c.open {
			open = append(open, s)
		}
		clear(c.open)
	}
	c.mu.Unlock()
	for _, s := range open {
		closeReal(s.Session)
	}
}

// Slow makes every call from now on wait d before it goes through, as
// calls over a congested network or to an overloaded server do; 0 makes
// them fast again. A call whose context ends while it waits fails with
// backends.ErrUnavailable and never reaches the backend. Inside a
// testing/synctest bubble the wait passes in virtual time. A negative d
// counts as 0.
func (c *Crashable) Slow(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.slow = max(d, 0)
}

// gate returns nil unless crashed, after the delay of Slow; crashed, it
// blocks until ctx ends or Refuse. Without a backend it refuses at once.
func (c *Crashable) gate(ctx context.Context) error {
	if c.b == nil {
		return fmt.Errorf("%w: hustingstest: a Crashable of a nil backend", backends.ErrInvalid)
	}
	c.mu.Lock()
	crashed, slow := c.crashed, c.slow
	c.mu.Unlock()
	if !crashed && slow > 0 {
		t := time.NewTimer(slow)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: slow: %w", backends.ErrUnavailable, ctx.Err())
		case <-c.refused:
			return fmt.Errorf("%w: crashed, and its calls refused", backends.ErrUnavailable)
		case <-t.C:
		}
	}
	if !crashed {
		return nil
	}
	select {
	case <-ctx.Done():
		return fmt.Errorf("%w: crashed: %w", backends.ErrUnavailable, ctx.Err())
	case <-c.refused:
		return fmt.Errorf("%w: crashed, and its calls refused", backends.ErrUnavailable)
	}
}

// Open opens a session on the real backend unless crashed.
func (c *Crashable) Open(ctx context.Context, id string, ttl time.Duration) (backends.Session, error) {
	if err := c.gate(ctx); err != nil {
		return nil, err
	}
	s, err := c.b.Open(ctx, id, ttl)
	if err != nil {
		return nil, err
	}
	w := &session{Session: s, c: c}
	c.mu.Lock()
	refused := c.closed
	if !refused {
		c.open[w] = struct{}{}
	}
	c.mu.Unlock()
	if refused { // Refuse came while the Open was on its way
		closeReal(s)
		return nil, fmt.Errorf("%w: crashed, and its calls refused", backends.ErrUnavailable)
	}
	return w, nil
}

// refuseTimeout bounds each Close of a real session that Refuse makes.
const refuseTimeout = 10 * time.Second

// closeReal closes a real session for good, within refuseTimeout.
func closeReal(s backends.Session) {
	ctx, cancel := context.WithTimeout(context.Background(), refuseTimeout)
	defer cancel()
	_ = s.Close(ctx)
}

// Holder asks the real backend unless crashed.
func (c *Crashable) Holder(ctx context.Context, name string) (backends.Holder, error) {
	if err := c.gate(ctx); err != nil {
		return backends.Holder{}, err
	}
	return c.b.Holder(ctx, name)
}

// Watch watches on the real backend unless crashed; a crashed candidate's
// watches stay open but it never acts on them.
func (c *Crashable) Watch(ctx context.Context, name string) (<-chan struct{}, error) {
	if err := c.gate(ctx); err != nil {
		return nil, err
	}
	return c.b.Watch(ctx, name)
}

// List lists the real backend's locks unless crashed.
func (c *Crashable) List(ctx context.Context, prefix string) ([]string, error) {
	if err := c.gate(ctx); err != nil {
		return nil, err
	}
	return c.b.List(ctx, prefix)
}

// Members lists the real registry unless crashed.
func (c *Crashable) Members(ctx context.Context, group string) ([]strategy.Candidate, error) {
	if err := c.gate(ctx); err != nil {
		return nil, err
	}
	return c.b.Members(ctx, group)
}

// session is a real session whose calls pass the gate of its Backend.
type session struct {
	backends.Session
	c *Crashable
}

func (s *session) Acquire(ctx context.Context, name string, lease time.Duration) (events.Token, error) {
	if err := s.c.gate(ctx); err != nil {
		return 0, err
	}
	return s.Session.Acquire(ctx, name, lease)
}

func (s *session) KeepAlive(ctx context.Context) error {
	if err := s.c.gate(ctx); err != nil {
		return err
	}
	return s.Session.KeepAlive(ctx)
}

func (s *session) Release(ctx context.Context, name string, token events.Token, hold time.Duration) error {
	if err := s.c.gate(ctx); err != nil {
		return err
	}
	return s.Session.Release(ctx, name, token, hold)
}

func (s *session) Close(ctx context.Context) error {
	if err := s.c.gate(ctx); err != nil {
		return err
	}
	s.c.mu.Lock()
	delete(s.c.open, s)
	s.c.mu.Unlock()
	return s.Session.Close(ctx)
}

func (s *session) Register(ctx context.Context, group string, cand strategy.Candidate) (strategy.Candidate, error) {
	if err := s.c.gate(ctx); err != nil {
		return strategy.Candidate{}, err
	}
	return s.Session.Register(ctx, group, cand)
}

func (s *session) Deregister(ctx context.Context, group string) error {
	if err := s.c.gate(ctx); err != nil {
		return err
	}
	return s.Session.Deregister(ctx, group)
}

func (s *session) Dequeue(ctx context.Context, name string) error {
	if err := s.c.gate(ctx); err != nil {
		return err
	}
	if d, ok := s.Session.(backends.Dequeuer); ok {
		return d.Dequeue(ctx, name)
	}
	return nil // a backend that does not queue has no lines to leave
}
