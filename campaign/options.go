package campaign

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"time"
)

// Option configures a Campaign, RunIfLeader, Every or Observe. Each option's
// doc says where it applies; elsewhere it is ignored.
type Option interface {
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// config holds every option; zero values mean "use the default".
type config struct {
	id        string
	prefix    string
	ttl       time.Duration
	keepAlive time.Duration
	retry     time.Duration
	jitter    time.Duration
	margin    time.Duration
	grace     time.Duration
	lease     time.Duration
	wait      time.Duration
	minHold   time.Duration
	logger    *slog.Logger
	jitterSet bool
	marginSet bool
	graceSet  bool
}

// Defaults, in one place.
const (
	DefaultTTL   = 10 * time.Second // session TTL of a Campaign
	DefaultRetry = time.Second      // pause between tries, before jitter
	DefaultGrace = 5 * time.Second  // wait for term work before releasing
	DefaultLease = 30 * time.Second // lease of a RunIfLeader run
)

// WithID sets the candidate ID. Default: hostname-pid-random. Applies
// everywhere.
func WithID(id string) Option { return optionFunc(func(c *config) { c.id = id }) }

// WithPrefix puts prefix and a "/" before the lock name, so several services
// can share one backend (for example the service name). Applies everywhere.
func WithPrefix(prefix string) Option { return optionFunc(func(c *config) { c.prefix = prefix }) }

// WithTTL sets a Campaign's session TTL: how long the backend keeps the lock
// after the last successful keep-alive. Default 10s.
func WithTTL(d time.Duration) Option { return optionFunc(func(c *config) { c.ttl = d }) }

// WithKeepAlive sets how often a Campaign renews its session. It must be
// shorter than the TTL less the safety margin, and should leave room for a
// retry or two. Default: TTL/3.
func WithKeepAlive(d time.Duration) Option { return optionFunc(func(c *config) { c.keepAlive = d }) }

// WithRetry sets the pause before trying again after contention or a
// backend error, before jitter; it bounds failover after a crash. Default
// 1s. Applies to Campaign, to RunIfLeader's wait, and to Observe's polling.
func WithRetry(d time.Duration) Option { return optionFunc(func(c *config) { c.retry = d }) }

// WithJitter sets the most that is added at random to each retry pause, so
// candidates do not retry in step. Default: retry/5. Zero disables it.
func WithJitter(d time.Duration) Option {
	return optionFunc(func(c *config) { c.jitter, c.jitterSet = d, true })
}

// WithSafetyMargin sets how long before the backend's lease runs out the
// candidate stops believing it leads: a term's local deadline is the start of
// the last successful acquire or renewal + TTL (or lease) − margin. It
// covers clock drift and delivery delays. Default: a tenth of the TTL or
// lease. Applies to Campaign and RunIfLeader.
func WithSafetyMargin(d time.Duration) Option {
	return optionFunc(func(c *config) { c.margin, c.marginSet = d, true })
}

// WithGrace bounds how long a graceful stop (Resign, Close, the end of
// Run's context) waits for work bound to the term (WhileLeader) to return
// before the lock is released. Never past the term's deadline. Default 5s.
func WithGrace(d time.Duration) Option {
	return optionFunc(func(c *config) { c.grace, c.graceSet = d, true })
}

// WithLease sets how long a RunIfLeader run may hold the lock: fn's context
// ends then, and the backend frees the lock even if this process dies.
// Default 30s; Every defaults it to the period.
func WithLease(d time.Duration) Option { return optionFunc(func(c *config) { c.lease = d }) }

// WithWait makes RunIfLeader wait up to d for a held lock instead of
// skipping at once. Default 0.
func WithWait(d time.Duration) Option { return optionFunc(func(c *config) { c.wait = d }) }

// WithMinHold keeps a RunIfLeader lock held until d after it was acquired,
// even if fn returned sooner, so that nodes whose schedules run late skip
// instead of running again (ShedLock's lockAtLeastFor). Default 0.
func WithMinHold(d time.Duration) Option { return optionFunc(func(c *config) { c.minHold = d }) }

// WithLogger sets where lost leases, backend errors and failed actions are
// logged; contention is logged at debug level only. Default: discard.
func WithLogger(l *slog.Logger) Option { return optionFunc(func(c *config) { c.logger = l }) }

func newConfig(opts []Option) config {
	var c config
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	if c.id == "" {
		c.id = defaultID()
	}
	if c.ttl == 0 {
		c.ttl = DefaultTTL
	}
	if c.keepAlive == 0 {
		c.keepAlive = c.ttl / 3
	}
	if c.retry == 0 {
		c.retry = DefaultRetry
	}
	if !c.jitterSet {
		c.jitter = c.retry / 5
	}
	if !c.graceSet {
		c.grace = DefaultGrace
	}
	if c.lease == 0 {
		c.lease = DefaultLease
	}
	if c.logger == nil {
		c.logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// marginFor returns the safety margin for a lease of d.
func (c *config) marginFor(d time.Duration) time.Duration {
	if c.marginSet {
		return c.margin
	}
	return d / 10
}

// fullName joins the prefix and name.
func (c *config) fullName(name string) string {
	if c.prefix == "" {
		return name
	}
	return c.prefix + "/" + name
}

// validateCampaign checks the options a Campaign uses.
func (c *config) validateCampaign() error {
	switch {
	case c.ttl < 0:
		return fmt.Errorf("%w: TTL %v must be > 0", ErrInvalid, c.ttl)
	case c.keepAlive <= 0 || c.keepAlive >= c.ttl-c.marginFor(c.ttl):
		return fmt.Errorf("%w: keep-alive %v must be > 0 and shorter than the TTL %v less the safety margin %v", ErrInvalid, c.keepAlive, c.ttl, c.marginFor(c.ttl))
	case c.grace < 0:
		return fmt.Errorf("%w: grace %v must be ≥ 0", ErrInvalid, c.grace)
	}
	return c.validateCommon(c.ttl)
}

// validateOneShot checks the options RunIfLeader uses.
func (c *config) validateOneShot() error {
	switch {
	case c.lease < 0:
		return fmt.Errorf("%w: lease %v must be > 0", ErrInvalid, c.lease)
	case c.wait < 0:
		return fmt.Errorf("%w: wait %v must be ≥ 0", ErrInvalid, c.wait)
	case c.minHold < 0:
		return fmt.Errorf("%w: minimum hold %v must be ≥ 0", ErrInvalid, c.minHold)
	}
	return c.validateCommon(c.lease)
}

func (c *config) validateCommon(lease time.Duration) error {
	m := c.marginFor(lease)
	switch {
	case c.retry < 0:
		return fmt.Errorf("%w: retry %v must be > 0", ErrInvalid, c.retry)
	case c.jitter < 0:
		return fmt.Errorf("%w: jitter %v must be ≥ 0", ErrInvalid, c.jitter)
	case m < 0 || m >= lease:
		return fmt.Errorf("%w: safety margin %v must be ≥ 0 and shorter than %v", ErrInvalid, m, lease)
	}
	return nil
}

// retryPause returns the retry interval plus random jitter.
func (c *config) retryPause() time.Duration {
	if c.jitter <= 0 {
		return c.retry
	}
	return c.retry + rand.N(c.jitter)
}

// defaultID returns hostname-pid-random, unique per process start.
func defaultID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "host"
	}
	return fmt.Sprintf("%s-%d-%06x", host, os.Getpid(), rand.Uint32()&0xffffff)
}
