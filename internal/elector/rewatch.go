package elector

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Rewatch is a backend watch kept up by its owner: the watch, poll and
// rewatch loop that campaigns, one-shot waiters and Observe share. While a
// watch is up its channel wakes the owner; when it breaks (the channel
// closes) or cannot be set up, the owner polls at its retry interval, and
// opens it again once a pause has passed (Due). The zero value has no
// watch. Its owner uses it from one goroutine at a time.
type Rewatch struct {
	ch        <-chan struct{}
	cancel    context.CancelFunc
	notBefore time.Time
}

// WatchFunc is a backend's Watch, or its WatchReleases.
type WatchFunc func(ctx context.Context, name string) (<-chan struct{}, error)

// OpenWatch sets up watch on every name (one channel for all, see
// watchAll) to live under ctx until the returned cancel is called; setup
// bounds only the set-up. Forwarders of several names are tracked by wg
// (nil is allowed for one name, which needs none); with fired non-nil they
// also mark which names signalled (see watchAll).
// On error whatever was opened is cancelled. It does not touch a Rewatch,
// so that a campaign can open a watch in its call's goroutine and Set it
// in its own.
func OpenWatch(ctx, setup context.Context, watch WatchFunc, names []string, wg *sync.WaitGroup, fired *atomic.Uint64) (<-chan struct{}, context.CancelFunc, error) {
	wctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(setup, cancel)
	ch, err := watchAll(wctx, cancel, watch, names, wg, fired)
	stop()
	if err != nil {
		cancel()
		return nil, nil, err
	}
	return ch, cancel, nil
}

// Open opens a watch (see OpenWatch) and makes it r's; if it fails, no
// new watch is Due before pause has passed.
func (r *Rewatch) Open(ctx, setup context.Context, watch WatchFunc, names []string, wg *sync.WaitGroup, pause time.Duration) error {
	ch, cancel, err := OpenWatch(ctx, setup, watch, names, wg, nil)
	if err != nil {
		r.Failed(pause)
		return err
	}
	r.Set(ch, cancel)
	return nil
}

// Set makes ch, ended by cancel, r's watch, stopping any it had.
func (r *Rewatch) Set(ch <-chan struct{}, cancel context.CancelFunc) {
	r.Stop()
	r.ch, r.cancel = ch, cancel
}

// Due reports whether a watch should be opened at now: none is up, and
// the pause after the last failure or break is over.
func (r *Rewatch) Due(now time.Time) bool { return r.ch == nil && !now.Before(r.notBefore) }

// C returns the watch's channel: nil, never ready, while none is up.
func (r *Rewatch) C() <-chan struct{} { return r.ch }

// Failed records a failed set-up: no watch is Due before pause has passed.
func (r *Rewatch) Failed(pause time.Duration) { r.notBefore = time.Now().Add(pause) }

// Broken records that the watch's channel closed: the watch is stopped,
// and no new one is Due before pause has passed; poll meanwhile.
func (r *Rewatch) Broken(pause time.Duration) {
	r.Stop()
	r.Failed(pause)
}

// Stop ends the watch, if one is up.
func (r *Rewatch) Stop() {
	if r.cancel != nil {
		r.cancel()
	}
	r.ch, r.cancel = nil, nil
}
