package campaign_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
)

// lostAnswers is a backend whose sessions lose the answer of their next
// lose successful acquires: the server applied them, the client was told
// the backend is unavailable (a timeout after the request went out).
type lostAnswers struct {
	backends.Backend
	lose atomic.Int32

	mu     sync.Mutex
	tokens map[string]events.Token // what each lost answer said
}

func (b *lostAnswers) Open(ctx context.Context, id string, ttl time.Duration) (backends.Session, error) {
	s, err := b.Backend.Open(ctx, id, ttl)
	if err != nil {
		return nil, err
	}
	return &lostAnswerSession{Session: s, b: b}, nil
}

type lostAnswerSession struct {
	backends.Session
	b *lostAnswers
}

func (s *lostAnswerSession) Acquire(ctx context.Context, name string, lease time.Duration) (events.Token, error) {
	tok, err := s.Session.Acquire(ctx, name, lease)
	if err == nil && s.b.lose.Add(-1) >= 0 {
		s.b.mu.Lock()
		s.b.tokens[name] = tok
		s.b.mu.Unlock()
		return 0, fmt.Errorf("%w: the answer was lost", backends.ErrUnavailable)
	}
	return tok, err
}

func newLostAnswers(lose int) (*lostAnswers, *memory.Backend) {
	mem := memory.New()
	b := &lostAnswers{Backend: mem, tokens: map[string]events.Token{}}
	b.lose.Store(int32(lose))
	return b, mem
}

// runCandidate runs cand until the test's bubble ends it with Close.
func runCandidate(t *testing.T, cand *campaign.Session) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = cand.Run(context.Background())
	}()
	t.Cleanup(func() {
		cand.Close()
		<-done
	})
}

// An acquire the server applied after the client gave up on it is the
// campaign's: the next try adopts it, under the token the server gave.
func TestAcquireWithLostAnswerIsAdopted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := newLostAnswers(1)
		cand, _ := campaign.NewSession(b, campaign.WithID("a"), campaign.WithTTL(ttl))
		runCandidate(t, cand)
		c, _ := campaign.New(b, "lock", campaign.WithSession(cand))
		go c.Run(context.Background())
		defer c.Close()
		e := next(t, c.Events())
		if e.Kind != events.Elected || e.Token != b.tokens["lock"] {
			t.Errorf("after a lost answer: %v, want Elected under the token the server gave (%d)", e, b.tokens["lock"])
		}
	})
}

// An acquire the server applied after the client gave up on it is
// released when the campaign ends before it could adopt it: the shared
// session lives on, and would otherwise hold the lock for nobody.
func TestAcquireWithLostAnswerIsReleasedOnClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, mem := newLostAnswers(1)
		cand, _ := campaign.NewSession(b, campaign.WithID("a"), campaign.WithTTL(ttl))
		runCandidate(t, cand)
		c, _ := campaign.New(b, "lock", campaign.WithSession(cand), campaign.WithRetry(time.Hour))
		go c.Run(context.Background())
		synctest.Wait()
		if s := c.State(); s.Leader || s.Err == nil {
			t.Fatalf("after a lost answer: state %+v, want no term and the error", s)
		}
		c.Close()
		if h, err := mem.Holder(t.Context(), "lock"); err != nil || !h.Free() {
			t.Errorf("campaign closed, its session alive: the lock is held by %+v (%v), want free", h, err)
		}
	})
}
