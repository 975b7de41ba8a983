package elector

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/fanout"
	"github.com/hustings/hustings/internal/validate"
	"github.com/hustings/hustings/strategy"
)

// Elector is the engine of a campaign: one candidate's long-lived attempt
// to hold a lock, publishing Elected and Revoked. Package campaign wraps it;
// its docs are the user's. Its methods are safe for concurrent use.
type Elector struct {
	backend backends.Backend
	name    string   // the lock's or the group's full name, as events say
	slots   []string // the lock name of each slot; one for a single lock
	label   string   // the backend's name, for metrics
	cfg     Config
	out     *fanout.Stream // owned by the actor once the campaign starts
	gate    *gate          // nil without a strategy; owned by the actor

	// mu guards what follows, and the state of the actor.
	mu      sync.Mutex
	act     *actor        // the running campaign; nil before Run or Start
	closed  bool          // Close was called
	last    events.Event  // the last event published
	feed    *fanout.Feed  // for Subscribe; made by the first subscriber
	done    chan struct{} // closed once Run has returned; made by the first waiter
	elected chan struct{} // signalled (buffer 1) when a term starts; made by WhileLeader
}

// State is a snapshot of an elector, for observation only.
type State struct {
	// Name is the full lock name.
	Name string
	// ID is this campaign's candidate ID.
	ID string
	// Leader reports whether a term is in force.
	Leader bool
	// Slot is the group slot of the term in force, or of the last one; 0
	// for a single lock.
	Slot int
	// Token is the fencing token of the term in force, or of the last one.
	Token events.Token
	// Deadline is the local deadline of the term in force, or the one the
	// last term had when it ended.
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

// New returns an elector for the lock name on b. It validates the options
// and starts nothing.
func New(b backends.Backend, name string, opts ...Option) (*Elector, error) {
	if err := CheckBackend(b); err != nil {
		return nil, err
	}
	cfg := NewConfig(opts)
	entry := ForCampaign
	if cfg.Slots > 1 {
		entry = ForGroup
	}
	if err := errors.Join(cfg.Refuse(entry), cfg.UseSession(b)); err != nil {
		return nil, err
	}
	if err := cfg.ValidateElector(); err != nil {
		return nil, err
	}
	full := name
	for _, n := range append([]string{full}, SlotNames(full, cfg.Slots)...) {
		if err := validate.Name(n); err != nil {
			return nil, Invalid(err)
		}
	}
	if err := validate.Candidate(full, cfg.Me); err != nil { // with a strategy or not
		return nil, Invalid(err)
	}
	e := &Elector{
		backend: b,
		name:    full,
		slots:   SlotNames(full, cfg.Slots),
		label:   BackendLabel(b),
		cfg:     cfg,
		out:     fanout.NewStream(),
	}
	g, err := newGate(b, full, &e.cfg)
	if err != nil {
		return nil, err
	}
	e.gate = g
	return e, nil
}

// SlotNames returns the lock names of a group's n slots: the name itself
// for a single lock (n ≤ 1), else name/slot-0 … name/slot-(n-1).
func SlotNames(name string, n int) []string {
	if n <= 1 {
		return []string{name}
	}
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s/slot-%d", name, i)
	}
	return names
}

// SetScore changes this candidate's score in the group's registry; it
// takes effect at the next registry update, which it asks for at once. It
// returns ErrInvalid for a score that is not a finite number.
func (e *Elector) SetScore(score float64) error {
	if math.IsNaN(score) || math.IsInf(score, 0) {
		return fmt.Errorf("%w: score %v is not a finite number", ErrInvalid, score)
	}
	if e.cfg.Strategy == nil {
		return fmt.Errorf("%w: SetScore needs a group strategy (group.WithStrategy): without one no score is read", ErrInvalid)
	}
	e.mu.Lock()
	over, a := e.over(), e.act
	e.cfg.Me.Score = score // the one field of the Config that changes: under e.mu
	e.mu.Unlock()
	if over {
		return ErrClosed
	}
	if a != nil {
		a.do(a.updated)
	}
	return nil
}

// over reports whether Close was called or Run has returned; e.mu held.
func (e *Elector) over() bool {
	return e.closed || (e.act != nil && e.act.end.phase == finished)
}

// entry returns this candidate's registry entry; e.mu held.
func (e *Elector) entry() strategy.Candidate {
	c := e.cfg.Me
	c.ID = e.cfg.ID
	return c
}

// Events: see campaign.Campaign.Events, where its doc is kept, once.
func (e *Elector) Events() <-chan events.Event { return e.out.C() }

// Subscribe: see campaign.Campaign.Subscribe, where its doc is kept, once.
func (e *Elector) Subscribe(ctx context.Context) <-chan events.Event {
	s := fanout.NewStream()
	go e.subscribers().Forward(s, ctx.Done()) // ends with ctx or the campaign
	return s.C()
}

// subscribers returns the feed of subscribers, made at the first call
// from the last event published (a campaign nobody subscribes to keeps
// no feed).
func (e *Elector) subscribers() *fanout.Feed {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.feed == nil {
		e.feed = &fanout.Feed{}
		if e.last.Kind != 0 {
			e.feed.Publish(e.last)
		}
		if (e.act == nil && e.closed) || (e.act != nil && e.act.end.phase == finished) {
			e.feed.Close()
		}
	}
	return e.feed
}

// publish makes ev the last event and hands it to the Events channel and
// to subscribers; e.mu held.
func (e *Elector) publish(ev events.Event) {
	e.last = ev
	e.out.Publish(ev)
	if e.feed != nil {
		e.feed.Publish(ev)
	}
}

// State: see campaign.Campaign.State, where its doc is kept, once.
func (e *Elector) State() State {
	e.mu.Lock()
	defer e.mu.Unlock()
	last := e.last // of the term in force, or of the last one
	s := State{Name: e.name, ID: e.cfg.ID, Slot: last.Slot, Token: last.Token, Deadline: last.Deadline, LastEvent: last, Dropped: e.out.Dropped()}
	if a := e.act; a != nil {
		s.Err = a.err()
		if a.term != nil {
			s.Leader, s.Deadline = true, a.term.live()
		}
	}
	return s
}

// Run: see campaign.Campaign.Run, where its doc is kept, once.
func (e *Elector) Run(ctx context.Context) error {
	if err := CheckContext(ctx); err != nil {
		return err
	}
	if err := e.start(ctx); err != nil {
		return err
	}
	<-e.finished()
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.act.end.err
}

// finished returns a channel closed once the campaign has finished.
func (e *Elector) finished() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.done == nil {
		e.done = make(chan struct{})
		if e.act != nil && e.act.end.phase == finished {
			close(e.done)
		}
	}
	return e.done
}

// electedSignal returns the channel signalled when a term starts.
func (e *Elector) electedSignal() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.elected == nil {
		e.elected = make(chan struct{}, 1)
	}
	return e.elected
}

// Start runs the campaign until Close, or until its session stops,
// without a goroutine of the caller's: see campaign.Session.Campaign.
func (e *Elector) Start() error { return e.start(context.Background()) }

// start begins the campaign on its session, or on a private one made for
// it, which lives and ends with it.
func (e *Elector) start(ctx context.Context) error {
	e.mu.Lock()
	switch {
	case e.over():
		e.mu.Unlock()
		return ErrClosed
	case e.act != nil:
		e.mu.Unlock()
		return errRunning
	}
	s, private := e.cfg.Session, false
	if s == nil {
		s, private = newSession(e.backend, e.cfg), true
	}
	a := newActor(e, ctx, s)
	if err := s.join(a); err != nil {
		e.mu.Unlock()
		return err
	}
	e.act = a
	e.mu.Unlock()
	e.cfg.Hooks.Campaign(e.name, e.label)
	if private {
		go func() { _ = s.Run(context.WithoutCancel(ctx)) }() // ended by finish's Close
	}
	a.begin()
	return nil
}

// finish is the campaign's last step, once its actor is done: the event
// streams close, the campaign leaves its session (a private one is
// closed, freeing whatever is still held), and Run returns.
func (e *Elector) finish(a *actor) {
	a.on.leave(a)
	if a.private() {
		_ = a.on.Close()
	}
	e.out.Close()
	e.mu.Lock()
	a.end.phase = finished
	f := e.feed
	if e.done != nil {
		close(e.done)
	}
	e.mu.Unlock()
	if f != nil {
		f.Close()
	}
}

// Resign: see campaign.Campaign.Resign, where its doc is kept, once.
func (e *Elector) Resign(ctx context.Context) error {
	return e.resign(ctx, 0)
}

func (e *Elector) resign(ctx context.Context, token events.Token) error {
	if err := CheckContext(ctx); err != nil {
		return err
	}
	e.mu.Lock()
	a, over := e.act, e.over()
	e.mu.Unlock()
	switch {
	case over:
		return ErrClosed
	case a == nil:
		return nil
	}
	req := resignReq{token: token, done: make(chan error, 1)}
	if !a.do(func() { a.resign(req) }) {
		return nil // stopping: the term ends anyway
	}
	select {
	case err := <-req.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close: see campaign.Campaign.Close, where its doc is kept, once.
func (e *Elector) Close() error {
	e.mu.Lock()
	a, f := e.act, e.feed
	first := !e.closed
	e.closed = true
	e.mu.Unlock()
	if a == nil {
		if first {
			e.out.Close() // no actor will ever own the stream
			if f != nil {
				f.Close()
			}
		}
		return nil
	}
	a.do(func() { a.stop(events.ErrResigned, ErrClosed) })
	<-e.finished()
	return nil
}
