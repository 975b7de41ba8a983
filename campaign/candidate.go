package campaign

import (
	"context"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/internal/elector"
)

// Candidate is one candidate's session on a backend, shared by many
// campaigns and groups (WithCandidate): one keep-alive round trip per tick
// renews every lock they hold, so a process holding thousands of locks
// costs the backend one request per tick, not one per lock.
//
// Run keeps the session alive and opens a new one when the backend loses
// it; the campaigns on it then end their terms (Revoked with
// events.ErrSessionLost) and campaign again on the new session. Each
// campaign still keeps its own local deadline from the session's last
// renewal, so the safety contract is the same as with a session of its
// own. Close the campaigns before the candidate: closing the candidate ends
// the session and every term on it. Its methods are safe for concurrent
// use.
type Candidate struct {
	c *elector.Candidate
}

// NewCandidate returns a candidate on b. WithID, WithTTL, WithKeepAlive,
// WithRetry, WithJitter and WithLogger apply; the campaigns on it take its
// ID and TTL. It validates and starts nothing: call Run.
func NewCandidate(b backends.Backend, opts ...Option) (*Candidate, error) {
	c, err := elector.NewCandidate(b, opts...)
	if err != nil {
		return nil, err
	}
	return &Candidate{c: c}, nil
}

// ID returns the candidate ID.
func (c *Candidate) ID() string { return c.c.ID() }

// Run opens and renews the session until ctx ends or Close is called, then
// closes it, freeing every lock still held on it. It returns ctx.Err(),
// ErrClosed after Close, ErrInvalid (wrapping the backend's error) when the
// backend refuses to open the session (a closed client, a TTL over
// ZooKeeper's session timeout), which no retry cures, and ErrRunning or
// ErrClosed if called again. Campaigns on it then end with ErrClosed.
func (c *Candidate) Run(ctx context.Context) error { return c.c.Run(ctx) }

// Close stops Run and waits for it. Calling it again, or before Run, is
// fine.
func (c *Candidate) Close() error { return c.c.Close() }

// WithCandidate makes a campaign or group use cand's shared session instead
// of opening its own; cand must be on the same backend. The campaign takes
// cand's ID and TTL (options setting them are overridden). Default: a
// session of the campaign's own.
func WithCandidate(cand *Candidate) Option {
	return elector.OptionFunc(func(cfg *elector.Config) {
		cfg.Candidate = nil
		if cand != nil {
			cfg.Candidate = cand.c
		}
	})
}
