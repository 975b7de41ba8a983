package campaign

import (
	"context"
	"errors"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/internal/elector"
)

// Session is one candidate's liveness on a backend (an etcd lease, a
// ZooKeeper session node, a Redis session key), shared by many campaigns
// and groups (WithSession): one keep-alive round trip per tick renews
// every lock they hold, so a process holding thousands of locks costs the
// backend one request per tick, not one per lock.
//
// Run keeps the session alive and opens a new one when the backend loses
// it; the campaigns on it then end their terms (Revoked with
// events.ErrSessionLost) and campaign again on the new session. Each
// campaign still keeps its own local deadline from the session's last
// renewal, so the safety contract is the same as with a session of its
// own.
//
// The session is where congestion is handled: it has at most 64 backend
// calls of its campaigns in flight (releases first, the rest in order;
// its keep-alive never waits behind them), fewer while calls queue at the
// server (a quarter of the renewal's slack beyond the quickest answer
// halves the bound), and campaigns whose calls fail back off
// exponentially, so thousands started at once are all elected.
//
// Close the campaigns before the session: closing the session ends every
// term on it. Its methods are safe for concurrent use.
type Session struct {
	s *elector.Session
}

// NewSession returns a session on b, renewed every third of its TTL.
// The options whose docs say they apply to NewSession apply; the campaigns on it take its
// ID and TTL. It validates and starts nothing: call Run.
func NewSession(b backends.Backend, opts ...Option) (*Session, error) {
	s, err := elector.NewSession(b, opts...)
	if err != nil {
		return nil, err
	}
	return &Session{s: s}, nil
}

// Run opens and renews the session until ctx ends or Close is called, then
// closes it, freeing every lock still held on it. It returns ctx.Err(),
// ErrClosed after Close, ErrInvalid (wrapping the backend's error) when the
// backend refuses to open the session (a closed client, a TTL over
// ZooKeeper's session timeout), which no retry cures, and ErrInvalid or
// ErrClosed if called again. Campaigns on it then end with ErrClosed.
func (s *Session) Run(ctx context.Context) error { return s.s.Run(ctx) }

// Campaign returns a campaign for the lock name on s, already running: it
// needs no goroutine of the caller's, nor one of its own while it holds
// the lock or waits for its turn (a held campaign costs a few KiB), so a
// process can hold thousands on one session. It runs until Close, or until
// s stops (Close or the end of Run's context), and then ends as Run does;
// Run on it returns ErrInvalid. The options are New's; WithSession(s) is
// implied. It returns ErrInvalid for bad options and ErrClosed if s is
// closed.
func (s *Session) Campaign(name string, opts ...Option) (*Campaign, error) {
	c, err := New(s.s.Backend(), name, append(opts, WithSession(s))...)
	if err != nil {
		return nil, err
	}
	if err := c.e.Start(); err != nil {
		return nil, err
	}
	return c, nil
}

// Close stops Run and waits for it. Calling it again, or before Run, is
// fine.
func (s *Session) Close() error { return s.s.Close() }

// WithSession makes a campaign, a group or a one-shot run (RunIfLeader,
// Every) use s instead of a session of its own; s must be on the same
// backend, else ErrInvalid; a nil s is ErrInvalid. It takes s's ID and
// TTL (options setting them are overridden). Default: a session of its
// own.
func WithSession(s *Session) Option {
	return elector.Opt("WithSession", elector.ForCampaign|elector.ForGroup|elector.ForRun|elector.ForEvery, func(cfg *elector.Config) {
		if s == nil {
			cfg.Reject(errors.New("nil session"))
			return
		}
		cfg.Session = s.s
	})
}
