package campaign_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/events"
)

// faulty is a memory backend with faults a test turns on: answers to Open
// and Acquire that come late, Releases and KeepAlives that fail, a Watch
// that is closed at once; it counts the holder reads. Its delays are
// slept in the caller's synctest bubble: every test that uses it runs in
// one, so they take no real time.
type faulty struct {
	*memory.Backend
	acquireDelay map[string]time.Duration // slept after the real Acquire returned
	openDelay    map[string]time.Duration // slept after the real Open returned
	failRelease  atomic.Int32             // Release calls that fail with ErrUnavailable
	// acquireDelayAll is slept after every real Acquire, in nanoseconds;
	// failKeepAlive fails every KeepAlive with ErrUnavailable.
	acquireDelayAll atomic.Int64
	failKeepAlive   atomic.Bool
	closedWatch     bool // Watch returns an already-closed channel
	holders         atomic.Int64
	// hot, if not nil, is closed at the thousandth holder read: a loop
	// that reads without pause never lets a synctest bubble's clock move,
	// so a test waits on hot as well as on its clock.
	hot chan struct{}
}

type faultySession struct {
	backends.Session
	f *faulty
}

func (f *faulty) Open(ctx context.Context, id string, ttl time.Duration) (backends.Session, error) {
	s, err := f.Backend.Open(ctx, id, ttl)
	if err != nil {
		return nil, err
	}
	time.Sleep(f.openDelay[id])
	return &faultySession{s, f}, nil
}

func (f *faulty) Holder(ctx context.Context, name string) (backends.Holder, error) {
	if f.holders.Add(1) == 1000 && f.hot != nil {
		close(f.hot)
	}
	return f.Backend.Holder(ctx, name)
}

func (f *faulty) Watch(ctx context.Context, name string) (<-chan struct{}, error) {
	if f.closedWatch {
		ch := make(chan struct{})
		close(ch)
		return ch, nil
	}
	return f.Backend.Watch(ctx, name)
}

func (s *faultySession) Acquire(ctx context.Context, name string, lease time.Duration) (events.Token, error) {
	tok, err := s.Session.Acquire(ctx, name, lease)
	time.Sleep(s.f.acquireDelay[s.ID()] + time.Duration(s.f.acquireDelayAll.Load()))
	return tok, err
}

func (s *faultySession) KeepAlive(ctx context.Context) error {
	if s.f.failKeepAlive.Load() {
		return fmt.Errorf("%w: injected", backends.ErrUnavailable)
	}
	return s.Session.KeepAlive(ctx)
}

func (s *faultySession) Release(ctx context.Context, name string, tok events.Token, hold time.Duration) error {
	if s.f.failRelease.Add(-1) >= 0 {
		return fmt.Errorf("%w: injected", backends.ErrUnavailable)
	}
	return s.Session.Release(ctx, name, tok, hold)
}
