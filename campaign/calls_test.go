package campaign_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/events"
)

// calls is a memory backend whose sessions count the calls that reach it,
// and can lose the answer of their next lose successful acquires: the
// server applied them, the client was told the backend is unavailable (a
// timeout after the request went out). Its sessions push no losses, as
// Redis's do not: KeepAlive alone finds them.
type calls struct {
	*memory.Backend
	opens, acquires, releases, keepAlives, closes atomic.Int64
	lose                                          atomic.Int32

	mu     sync.Mutex
	tokens map[string]events.Token // what each lost answer said
}

func newCalls(lose int) *calls {
	c := &calls{Backend: memory.New(), tokens: map[string]events.Token{}}
	c.lose.Store(int32(lose))
	return c
}

func (c *calls) Open(ctx context.Context, id string, ttl time.Duration) (backends.Session, error) {
	c.opens.Add(1)
	s, err := c.Backend.Open(ctx, id, ttl)
	if err != nil {
		return nil, err
	}
	return &callsSession{Session: s, c: c}, nil
}

// lost returns the token of name's lost answer.
func (c *calls) lost(name string) events.Token {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tokens[name]
}

type callsSession struct {
	backends.Session
	c *calls
}

func (s *callsSession) Acquire(ctx context.Context, name string, lease time.Duration) (events.Token, error) {
	s.c.acquires.Add(1)
	tok, err := s.Session.Acquire(ctx, name, lease)
	if err == nil && s.c.lose.Add(-1) >= 0 {
		s.c.mu.Lock()
		s.c.tokens[name] = tok
		s.c.mu.Unlock()
		return 0, fmt.Errorf("%w: the answer was lost", backends.ErrUnavailable)
	}
	return tok, err
}

func (s *callsSession) Release(ctx context.Context, name string, tok events.Token, hold time.Duration) error {
	s.c.releases.Add(1)
	return s.Session.Release(ctx, name, tok, hold)
}

func (s *callsSession) KeepAlive(ctx context.Context) error {
	s.c.keepAlives.Add(1)
	return s.Session.KeepAlive(ctx)
}

// Losses is nil: the session hides memory's pushed losses.
func (s *callsSession) Losses() <-chan struct{} { return nil }

func (s *callsSession) Close(ctx context.Context) error {
	s.c.closes.Add(1)
	return s.Session.Close(ctx)
}
