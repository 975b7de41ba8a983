package backendtest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/strategy"
)

// Crashable wraps a real backend for one candidate so that a test can
// crash the candidate without stopping its process: after Crash, every call
// blocks until its context ends and fails with ErrUnavailable, so nothing
// is released and nothing renewed; the server lets the candidate's session
// expire, as it would after a kill or a freeze. It is not a fake backend:
// every call that goes through reaches the real one. Safe for concurrent
// use.
type Crashable struct {
	backends.Backend
	mu      sync.Mutex
	crashed chan struct{} // closed while crashed; nil otherwise
}

// NewCrashable wraps b.
func NewCrashable(b backends.Backend) *Crashable { return &Crashable{Backend: b} }

// Crash makes every call from now on hang; there is no undo: a crashed
// candidate is replaced by a new one, as after a restart.
func (c *Crashable) Crash() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.crashed == nil {
		c.crashed = make(chan struct{})
	}
}

// gate blocks while crashed, until ctx ends.
func (c *Crashable) gate(ctx context.Context) error {
	c.mu.Lock()
	crashed := c.crashed != nil
	c.mu.Unlock()
	if !crashed {
		return nil
	}
	<-ctx.Done()
	return fmt.Errorf("%w: crashed: %w", backends.ErrUnavailable, ctx.Err())
}

// Open opens a session on the real backend unless crashed.
func (c *Crashable) Open(ctx context.Context, id string, ttl time.Duration) (backends.Session, error) {
	if err := c.gate(ctx); err != nil {
		return nil, err
	}
	s, err := c.Backend.Open(ctx, id, ttl)
	if err != nil {
		return nil, err
	}
	return &crashSession{Session: s, c: c}, nil
}

// Holder asks the real backend unless crashed.
func (c *Crashable) Holder(ctx context.Context, name string) (backends.Holder, error) {
	if err := c.gate(ctx); err != nil {
		return backends.Holder{}, err
	}
	return c.Backend.Holder(ctx, name)
}

// Watch watches on the real backend unless crashed; a crashed candidate's
// watches stay open but it never acts on them.
func (c *Crashable) Watch(ctx context.Context, name string) (<-chan struct{}, error) {
	if err := c.gate(ctx); err != nil {
		return nil, err
	}
	w, ok := c.Backend.(backends.Watcher)
	if !ok {
		return nil, fmt.Errorf("backendtest: %T is not a Watcher", c.Backend)
	}
	return w.Watch(ctx, name)
}

// Members lists the real registry unless crashed.
func (c *Crashable) Members(ctx context.Context, group string) ([]strategy.Candidate, error) {
	if err := c.gate(ctx); err != nil {
		return nil, err
	}
	r, ok := c.Backend.(backends.Registry)
	if !ok {
		return nil, fmt.Errorf("backendtest: %T is not a Registry", c.Backend)
	}
	return r.Members(ctx, group)
}

type crashSession struct {
	backends.Session
	c *Crashable
}

func (s *crashSession) Acquire(ctx context.Context, name string, lease time.Duration) (events.Token, error) {
	if err := s.c.gate(ctx); err != nil {
		return 0, err
	}
	return s.Session.Acquire(ctx, name, lease)
}

func (s *crashSession) KeepAlive(ctx context.Context) error {
	if err := s.c.gate(ctx); err != nil {
		return err
	}
	return s.Session.KeepAlive(ctx)
}

func (s *crashSession) Release(ctx context.Context, name string, token events.Token, hold time.Duration) error {
	if err := s.c.gate(ctx); err != nil {
		return err
	}
	return s.Session.Release(ctx, name, token, hold)
}

func (s *crashSession) Close(ctx context.Context) error {
	if err := s.c.gate(ctx); err != nil {
		return err
	}
	return s.Session.Close(ctx)
}

func (s *crashSession) Register(ctx context.Context, group string, cand strategy.Candidate) (strategy.Candidate, error) {
	if err := s.c.gate(ctx); err != nil {
		return strategy.Candidate{}, err
	}
	r, ok := s.Session.(backends.Registrar)
	if !ok {
		return strategy.Candidate{}, fmt.Errorf("backendtest: %T is not a Registrar", s.Session)
	}
	return r.Register(ctx, group, cand)
}

func (s *crashSession) Deregister(ctx context.Context, group string) error {
	if err := s.c.gate(ctx); err != nil {
		return err
	}
	r, ok := s.Session.(backends.Registrar)
	if !ok {
		return fmt.Errorf("backendtest: %T is not a Registrar", s.Session)
	}
	return r.Deregister(ctx, group)
}

func (s *crashSession) Dequeue(ctx context.Context, name string) error {
	if err := s.c.gate(ctx); err != nil {
		return err
	}
	if d, ok := s.Session.(backends.Dequeuer); ok {
		return d.Dequeue(ctx, name)
	}
	return nil // a backend that does not queue has no lines to leave
}
