package campaign

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
)

// Errors of this package; match them with errors.Is. Backend failures are
// returned wrapped and also match the errors of package backends.
var (
	// ErrClosed: the campaign was closed, or its Run already ended.
	ErrClosed = errors.New("campaign: closed")
	// ErrRunning: Run was called while another Run of the campaign is going.
	ErrRunning = errors.New("campaign: already running")
	// ErrInvalid: bad configuration or input, rejected before anything runs.
	ErrInvalid = errors.New("campaign: invalid")
)

// Campaign is a long-lived attempt by one candidate to hold one named lock.
// It publishes Elected when the backend has confirmed the lock and Revoked
// when the term ends, on the channel returned by Events. Its methods are
// safe for concurrent use.
type Campaign struct {
	backend backends.Backend
	name    string
	cfg     config
	out     *events.Stream // owned by Run's goroutine once Run starts
	feed    events.Feed    // for Subscribe

	mu      sync.Mutex
	state   State
	current *term // the term in force, nil if none
	started bool
	ended   bool // Run returned
	closed  bool
	closing chan struct{}  // closed by Close
	done    chan struct{}  // closed when Run returns
	resigns chan resignReq // served by Run's loop
	elected chan struct{}  // signalled (buffer 1) when a term starts
}

// State is a snapshot of a campaign, for observation only: by the time it is
// read it may be stale, so never decide to act on it (use the term context
// or RunIfLeader).
type State struct {
	// Name is the full lock name.
	Name string
	// ID is this campaign's candidate ID.
	ID string
	// Leader reports whether a term is in force.
	Leader bool
	// Token is the fencing token of the term in force, or of the last one.
	Token events.Token
	// Holder is the ID of the holder when known: this candidate while it
	// leads, otherwise empty.
	Holder string
	// Deadline is the local deadline of the term in force.
	Deadline time.Time
	// LastEvent is the last event published.
	LastEvent events.Event
	// Dropped counts events the Events subscriber never received.
	Dropped uint64
	// Err is the last backend error, or nil after a success.
	Err error
}

type resignReq struct {
	token events.Token // 0: whatever term is in force
	done  chan error
}

// New returns a campaign for the lock name on b. It validates the options
// and starts nothing: call Run.
func New(b backends.Backend, name string, opts ...Option) (*Campaign, error) {
	if b == nil {
		return nil, fmt.Errorf("%w: nil backend", ErrInvalid)
	}
	cfg := newConfig(opts)
	if err := cfg.validateCampaign(); err != nil {
		return nil, err
	}
	full := cfg.fullName(name)
	if err := backends.ValidateName(full); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return &Campaign{
		backend: b,
		name:    full,
		cfg:     cfg,
		out:     events.NewStream(),
		state:   State{Name: full, ID: cfg.id},
		closing: make(chan struct{}),
		done:    make(chan struct{}),
		resigns: make(chan resignReq),
		elected: make(chan struct{}, 1),
	}, nil
}

// Name returns the full lock name, prefix included.
func (c *Campaign) Name() string { return c.name }

// ID returns the candidate ID.
func (c *Campaign) ID() string { return c.cfg.id }

// Events returns the campaign's event channel; the same channel on every
// call. It is closed when Run returns (or by Close if Run never ran), after
// the Revoked that ends any term it announced. The campaign never waits for
// the reader: see package events for what a slow reader sees.
func (c *Campaign) Events() <-chan events.Event { return c.out.C() }

// Subscribe returns a channel of the campaign's events for one more
// subscriber, such as a dashboard or a log: it first receives the current
// state (Elected, if a term is in force), then every change, coalesced as
// for Events. It is closed when ctx ends, or when the campaign ends, after
// the Revoked it is owed. Each subscriber costs one goroutine, which ends
// then. Work should be bound to terms through Events and Term, not through
// a subscription, which may lag.
func (c *Campaign) Subscribe(ctx context.Context) <-chan events.Event {
	s := events.NewStream()
	go c.feed.Forward(s, ctx.Done()) // ends with ctx or the campaign
	return s.C()
}

// publish hands e to the Events channel and to subscribers.
func (c *Campaign) publish(e events.Event) {
	c.out.Publish(e)
	c.feed.Publish(e)
}

// State returns a snapshot of the campaign, for observation only.
func (c *Campaign) State() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.state
	s.Dropped = c.out.Dropped()
	return s
}

// Run campaigns until ctx ends or Close is called, and blocks until then.
// It owns every goroutine the campaign starts and waits for them. On the
// way out it ends the term in force gracefully: Revoked, then (bounded by
// the grace period) the work bound to the term, then release. It returns
// ctx.Err() when ctx ended, ErrClosed after Close, and ErrRunning or
// ErrClosed if called again.
func (c *Campaign) Run(ctx context.Context) error {
	c.mu.Lock()
	switch {
	case c.closed || c.ended:
		c.mu.Unlock()
		return ErrClosed
	case c.started:
		c.mu.Unlock()
		return ErrRunning
	}
	c.started = true
	c.mu.Unlock()
	defer close(c.done)
	defer func() {
		c.mu.Lock()
		c.ended = true
		c.mu.Unlock()
	}()
	defer c.feed.Close()
	defer c.out.Close()

	a := newActor(c, ctx)
	return a.run()
}

// Resign ends the term in force, if any, and releases the lock so that
// another candidate can win; it returns once the lock is released or ctx
// ends. The release waits for work bound to the term (see Term), bounded by
// the grace period: work that wants to step down should return (from
// WhileLeader's fn, return an error) rather than call Resign and wait on
// itself. The campaign stays in the race but waits at least one retry
// interval before trying again. With no term in force it does nothing and
// returns nil.
func (c *Campaign) Resign(ctx context.Context) error {
	return c.resign(ctx, 0)
}

func (c *Campaign) resign(ctx context.Context, token events.Token) error {
	c.mu.Lock()
	running := c.started && !c.ended && !c.closed
	c.mu.Unlock()
	if !running {
		return nil
	}
	req := resignReq{token: token, done: make(chan error, 1)}
	select {
	case c.resigns <- req:
	case <-c.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-req.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops the campaign: the term in force ends as in Run's graceful
// stop, and Close returns once Run has returned. Calling Close again, or
// before Run, is fine; later calls to Run return ErrClosed.
func (c *Campaign) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		<-c.doneIfStarted()
		return nil
	}
	c.closed = true
	close(c.closing)
	started := c.started
	c.mu.Unlock()
	if !started {
		c.out.Close() // Run will never own the stream
		c.feed.Close()
		return nil
	}
	<-c.done
	return nil
}

// doneIfStarted returns c.done if Run started, else a closed channel.
func (c *Campaign) doneIfStarted() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started {
		return c.done
	}
	ch := make(chan struct{})
	close(ch)
	return ch
}

// setState applies f to the state under the lock.
func (c *Campaign) setState(f func(*State)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f(&c.state)
}
