package campaign

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/hustings/hustings/internal/elector"
	"github.com/hustings/hustings/internal/validate"
)

// Option configures a Campaign, a Session, RunIfLeader, Every or Observe
// (and the groups of package group). Each option's doc says where it
// applies; given anywhere else, the call returns ErrInvalid naming it
// rather than ignore it. Options are made only by the With* functions.
type Option = elector.Option

// WithID sets the candidate ID: non-empty, at most 256 bytes of UTF-8,
// no control characters (the rules of lock names), else New reports
// ErrInvalid. Default: hostname-pid-random. Applies everywhere.
func WithID(id string) Option {
	return elector.Opt("WithID", elector.ForAll, func(c *elector.Config) {
		c.ID = id
		c.Reject(validate.Session(id, elector.DefaultTTL)) // the ID's part of it
	})
}

// positive refuses a duration that is not > 0.
func positive(what string, d time.Duration) error {
	if d > 0 {
		return nil
	}
	return fmt.Errorf("%s %v must be > 0", what, d)
}

// WithTTL sets how long the backend keeps a lock without hearing from its
// holder. For a campaign or a session, it is the session's TTL: the locks
// live until a TTL after the last successful keep-alive, renewed every
// third of it; default 10s, from 100ms (shorter, the renewals would be
// within a busy machine's scheduling delays). For a one-shot run
// (RunIfLeader, Every), it is how long the run may hold the lock: fn's
// context ends a safety margin before it, and the backend frees the lock
// then even if this process dies; default 30s (Every: the period), from
// 1ms; on a Session (WithSession), whose own TTL keeps the lock alive, it
// still bounds fn. At most 7 days; else ErrInvalid. With WithSession, a
// campaign takes the session's TTL instead. Applies everywhere but
// Observe.
func WithTTL(d time.Duration) Option {
	return elector.Opt("WithTTL", elector.ForAll&^elector.ForObserve, func(c *elector.Config) {
		c.TTL = d
		c.Reject(validate.TTL("TTL", d))
	})
}

// WithRetry sets the pause before trying again after contention or a
// backend error, to which up to a fifth more is added at random so that
// candidates do not retry in step; it bounds failover after a crash.
// Default 1s; must be > 0. Applies everywhere: a campaign's and a session's tries,
// RunIfLeader's wait, Observe's polling.
func WithRetry(d time.Duration) Option {
	return elector.Opt("WithRetry", elector.ForAll, func(c *elector.Config) {
		c.Retry = d
		c.Reject(positive("retry", d))
	})
}

// WithSafetyMargin sets how long before the backend's lease runs out the
// candidate stops believing it leads: a term's local deadline is the start of
// the last successful acquire or renewal + TTL − margin. It covers clock
// drift and delivery delays. Default: a tenth of the TTL. Applies
// everywhere but Observe.
func WithSafetyMargin(d time.Duration) Option {
	return elector.Opt("WithSafetyMargin", elector.ForAll&^elector.ForObserve, func(c *elector.Config) { c.Margin, c.MarginSet = d, true })
}

// WithGrace bounds how long a graceful stop (Resign, Close, the end of
// Run's context) waits for work bound to the term (WhileLeader) to return
// before the lock is released. Never past the term's deadline. Default 5s.
// Applies to New, NewSession (the campaigns' stop when it closes) and
// group.New.
func WithGrace(d time.Duration) Option {
	return elector.Opt("WithGrace", elector.ForCampaign|elector.ForGroup|elector.ForSession, func(c *elector.Config) { c.Grace, c.GraceSet = d, true })
}

// WithWait makes RunIfLeader wait up to d for a held lock instead of
// skipping at once. Default 0. Applies to RunIfLeader.
func WithWait(d time.Duration) Option {
	return elector.Opt("WithWait", elector.ForRun, func(c *elector.Config) { c.Wait = d })
}

// WithMinHold keeps a RunIfLeader lock held until d after it was acquired,
// even if fn returned sooner, so that nodes whose schedules run late skip
// instead of running again (ShedLock's lockAtLeastFor). Default 0. Applies
// to RunIfLeader (Every sets its own).
func WithMinHold(d time.Duration) Option {
	return elector.Opt("WithMinHold", elector.ForRun, func(c *elector.Config) { c.MinHold = d })
}

// minHold is WithMinHold for Every's runs, which take no WithMinHold from
// the caller.
func minHold(d time.Duration) Option {
	return elector.OptionFunc(func(c *elector.Config) { c.MinHold = d })
}

// ttl is Every's default TTL, the period, which a WithTTL after it
// overrides.
func ttl(d time.Duration) Option {
	return elector.OptionFunc(func(c *elector.Config) { c.TTL = d })
}

// WithLogger sets where lost leases, backend errors and failed actions are
// logged; contention is logged at debug level only. Default (and nil):
// discard. The campaign logs while it holds its lock: the logger's handler
// must not call the campaign's methods. Applies everywhere.
func WithLogger(l *slog.Logger) Option {
	return elector.Opt("WithLogger", elector.ForAll, func(c *elector.Config) { c.Logger = l })
}
