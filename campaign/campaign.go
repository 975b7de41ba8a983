package campaign

import (
	"context"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/elector"
)

// Errors of this package; match them with errors.Is. Backend failures are
// returned wrapped and also match the errors of package backends.
var (
	// ErrClosed: the campaign was closed, or its Run already ended.
	ErrClosed = elector.ErrClosed
	// ErrInvalid: bad configuration or input, rejected before anything
	// runs; also a second Run of a campaign (or of a session).
	ErrInvalid = elector.ErrInvalid
)

// Campaign is a long-lived attempt by one candidate to hold one named lock.
// It publishes Elected when the backend has confirmed the lock and Revoked
// when the term ends, on the channel returned by Events. Its methods are
// safe for concurrent use.
type Campaign struct {
	e *elector.Elector
}

// State is a snapshot of a campaign, for observation only: by the time it
// is read it may be stale, so never decide to act on it (use the term's
// context or RunIfLeader).
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
	// Token is the fencing token of the term in force, or of the last one;
	// 0 before the first term.
	Token events.Token
	// Deadline is the local deadline of the term in force: the campaign
	// revokes it no later than this unless a renewal moves it on. For an
	// ended term, the deadline it ended with.
	Deadline time.Time
	// LastEvent is the last event published; its Kind is 0 before the
	// first.
	LastEvent events.Event
	// Dropped counts the events the reader of Events never received (the
	// channel keeps only the latest state).
	Dropped uint64
	// Err is the last backend error, or nil after a success.
	Err error
}

// New returns a campaign for the lock name on b. It validates the options
// and starts nothing: call Run.
func New(b backends.Backend, name string, opts ...Option) (*Campaign, error) {
	e, err := elector.New(b, name, opts...)
	if err != nil {
		return nil, err
	}
	return &Campaign{e: e}, nil
}

// Events returns the campaign's event channel; the same channel on every
// call. It is closed when Run returns (or by Close if Run never ran), after
// the Revoked that ends any term it announced. The campaign never waits for
// the reader: see package events for what a slow reader sees.
func (c *Campaign) Events() <-chan events.Event { return c.e.Events() }

// Subscribe returns a channel of the campaign's events for one more
// subscriber, such as a dashboard or a log: it first receives the current
// state (Elected, if a term is in force), then every change, coalesced as
// for Events. It is closed when ctx ends, or when the campaign ends, after
// the Revoked it is owed. Each subscriber costs one goroutine, which ends
// then. Work should be bound to terms through Events and Term, not through
// a subscription, which may lag.
func (c *Campaign) Subscribe(ctx context.Context) <-chan events.Event { return c.e.Subscribe(ctx) }

// State returns a snapshot of the campaign, for observation only.
func (c *Campaign) State() State {
	st := c.e.State()
	return State{Name: st.Name, ID: st.ID, Leader: st.Leader, Slot: st.Slot, Token: st.Token,
		Deadline: st.Deadline, LastEvent: st.LastEvent, Dropped: st.Dropped, Err: st.Err}
}

// Run campaigns until ctx ends or Close is called, and blocks until then
// (Session.Campaign starts a campaign without a goroutine of the caller's).
// It owns every goroutine the campaign starts and waits for them. On the
// way out it ends the term in force gracefully: Revoked, then (bounded by
// the grace period) the work bound to the term, then release. It returns
// ctx.Err() when ctx ended, ErrClosed after Close, and ErrInvalid or
// ErrClosed if called again.
func (c *Campaign) Run(ctx context.Context) error { return c.e.Run(ctx) }

// Resign ends the term in force, if any, and releases the lock so that
// another candidate can win; it returns once the lock is released or ctx
// ends. The release waits for work bound to the term (see Term), bounded by
// the grace period: work that wants to step down should return (from
// WhileLeader's fn, return an error) rather than call Resign and wait on
// itself. The campaign stays in the race but waits at least one retry
// interval before trying again. With no term in force it does nothing and
// returns nil; after Close, or once Run has returned, it returns ErrClosed.
func (c *Campaign) Resign(ctx context.Context) error { return c.e.Resign(ctx) }

// Close stops the campaign: the term in force ends as in Run's graceful
// stop, and Close returns once Run has returned. Calling Close again, or
// before Run, is fine; later calls to Run return ErrClosed.
func (c *Campaign) Close() error { return c.e.Close() }

// Term binds work to the term in force, if its token matches (0 matches
// any term). It returns the term's context, cancelled the moment the term
// ends, the term's Elected event, and done, which the work must call when
// it returns: a graceful stop (Resign, Close, the end of Run's context)
// waits for every done, bounded by the grace period, before it releases the
// lock. ok is false, and nothing is bound, when no such term is in force.
// Safe for concurrent use; done may be called more than once.
func (c *Campaign) Term(token events.Token) (ctx context.Context, elected events.Event, done func(), ok bool) {
	return c.e.Term(token)
}

// SetScore changes this candidate's score in a group's registry, for
// strategy.Score (group.WithStrategy); the group re-ranks at once. It
// returns ErrInvalid for a NaN or infinite score and for a campaign
// without a strategy (a single lock, or a group without one), whose score
// nothing reads, and ErrClosed after Close or once Run has returned.
func (c *Campaign) SetScore(score float64) error { return c.e.SetScore(score) }
