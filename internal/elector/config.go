package elector

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/strategy"
)

// Errors shared by the public packages built on this one (campaign
// re-exports them, and group with it); match them with errors.Is.
var (
	// ErrClosed: the campaign was closed, or its Run already ended.
	ErrClosed = errors.New("campaign: closed")
	// ErrInvalid: bad configuration or input, rejected before anything runs.
	ErrInvalid = errors.New("campaign: invalid")
)

// errRunning is the ErrInvalid of a second Run.
var errRunning = fmt.Errorf("%w: already running (Run was called twice, or on a campaign Session.Campaign started)", ErrInvalid)

// Defaults, in one place; the public packages document them.
const (
	DefaultTTL    = 10 * time.Second
	DefaultRetry  = time.Second
	DefaultGrace  = 5 * time.Second
	DefaultRunTTL = 30 * time.Second
	// MinTTL is the shortest TTL a campaign takes: it renews every third of
	// the TTL and revokes a tenth before its end, and below this those
	// intervals are within a busy machine's scheduling delays, so a term
	// would flip on and off without anything failing.
	MinTTL = 100 * time.Millisecond
)

// Option configures an Elector or a one-shot run. Only the packages of this
// module can make one (through OptionFunc); users get them from the With*
// functions of package campaign and package group.
type Option interface {
	apply(*Config)
}

// OptionFunc makes an Option from a function that edits the Config, for
// the module's own plumbing (a group's slot count): it applies wherever
// it is given. Options of the public API are made with Opt.
type OptionFunc func(*Config)

func (f OptionFunc) apply(c *Config) { f(c) }

// Use is a set of the entry points an option applies to.
type Use uint8

// The entry points.
const (
	ForCampaign Use = 1 << iota // campaign.New
	ForGroup                    // group.New
	ForSession                  // campaign.NewSession
	ForRun                      // campaign.RunIfLeader, group.RunIfLeader
	ForEvery                    // campaign.Every
	ForObserve                  // campaign.Observe

	ForAll = ForCampaign | ForGroup | ForSession | ForRun | ForEvery | ForObserve
)

var entryNames = map[Use]string{
	ForCampaign: "campaign.New", ForGroup: "group.New", ForSession: "campaign.NewSession",
	ForRun: "RunIfLeader", ForEvery: "campaign.Every", ForObserve: "campaign.Observe",
}

// Opt makes the option named name (for errors: "WithTTL"), which applies
// to the entry points in use and edits the Config with f.
func Opt(name string, use Use, f func(*Config)) Option { return option{name, use, f} }

type option struct {
	name string
	use  Use
	f    func(*Config)
}

func (o option) apply(c *Config) {
	c.given = append(c.given, o)
	o.f(c)
}

// Refuse returns an error matching ErrInvalid for the first option given
// that does not apply to entry: an option that would be ignored is a
// mistake to report, not to hide.
func (c *Config) Refuse(entry Use) error {
	for _, o := range c.given {
		if o.use&entry == 0 {
			var at []string
			for u := ForCampaign; u <= ForObserve; u <<= 1 {
				if o.use&u != 0 {
					at = append(at, entryNames[u])
				}
			}
			return fmt.Errorf("%w: %s does not apply to %s (it applies to %s)", ErrInvalid, o.name, entryNames[entry], strings.Join(at, ", "))
		}
	}
	return nil
}

// Config holds every option; zero values mean "use the default". The
// public packages document each field through their With* functions.
type Config struct {
	ID        string
	TTL       time.Duration
	KeepAlive time.Duration
	Retry     time.Duration
	Jitter    time.Duration
	Margin    time.Duration
	Grace     time.Duration
	RunTTL    time.Duration
	Wait      time.Duration
	MinHold   time.Duration
	Logger    *slog.Logger
	JitterSet bool
	MarginSet bool
	GraceSet  bool
	// Slots is the number of slots of a group; 0 or 1 is a single lock.
	Slots int
	// Strategy, when set, gates tries by rank (see gate); Me is this
	// candidate's registry entry (score, weight, metadata).
	Strategy strategy.Strategy
	Me       strategy.Candidate
	Patience time.Duration // default: 2 × Retry
	Preempt  time.Duration // 0: no preemption
	Rotation time.Duration // 0: the epoch never advances
	// Registry replaces the backend's registry (for example gossip).
	Registry Registry
	// Session, when set, supplies a session shared with other electors
	// instead of one of the elector's own; its ID and TTL win.
	Session *Session
	// FailOpen: a one-shot run whose backend failed runs fn without the
	// lock (WithFailOpen); else it returns the backend's error.
	FailOpen bool
	// Hooks are told who did what, for metrics, health checks and traces.
	Hooks Hooks
	// Now is the clock Every's windows follow; time.Now by default.
	Now func() time.Time
	// Bad holds the errors of options given values they reject (see
	// Reject); validation reports the first.
	Bad []error
	// given lists the options made with Opt, for Refuse.
	given []option
}

// Reject records err, an option's refusal of the value it was given, for
// validation to report; a nil err is ignored. Options call it so that an
// explicit zero is an error rather than a silent default.
func (c *Config) Reject(err error) {
	if err != nil {
		c.Bad = append(c.Bad, Invalid(err))
	}
}

// CheckBackend refuses a nil backend, also a typed nil (a nil
// *redis.Backend in a backends.Backend), which would otherwise pass New
// and crash a goroutine of the library later.
func CheckBackend(b backends.Backend) error {
	if b == nil {
		return fmt.Errorf("%w: nil backend", ErrInvalid)
	}
	if v := reflect.ValueOf(b); v.Kind() == reflect.Pointer && v.IsNil() {
		return fmt.Errorf("%w: nil %T backend", ErrInvalid, b)
	}
	return nil
}

// CheckContext refuses a nil context, for the calls that take one.
func CheckContext(ctx context.Context) error {
	if ctx == nil {
		return fmt.Errorf("%w: nil context (use context.Background())", ErrInvalid)
	}
	return nil
}

// Invalid returns err, a validator's refusal of bad input, as an error that
// matches ErrInvalid as well as whatever err matches (backends.ErrInvalid,
// say), with one package prefix in its message: "campaign: invalid: TTL -1s
// must be from 1ms to 7 days", not "campaign: invalid: backends: invalid
// argument: TTL …".
func Invalid(err error) error { return invalidError{err} }

type invalidError struct{ err error }

func (e invalidError) Error() string {
	msg := e.err.Error()
	for _, prefix := range []error{ErrInvalid, backends.ErrInvalid, strategy.ErrInvalid} {
		msg = strings.TrimPrefix(msg, prefix.Error()+": ")
	}
	return ErrInvalid.Error() + ": " + msg
}

func (e invalidError) Unwrap() []error { return []error{ErrInvalid, e.err} }

// Registry lists a group's candidates and keeps this candidate's entry:
// group.Registry, whose doc is the user's, or the backend's own
// (backendRegistry).
type Registry interface {
	Members(ctx context.Context, group string) ([]strategy.Candidate, error)
	Register(ctx context.Context, group string, c strategy.Candidate) (strategy.Candidate, error)
	Deregister(ctx context.Context, group string) error
}

// NewConfig applies opts over the defaults.
func NewConfig(opts []Option) Config {
	var c Config
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	c.defaults()
	return c
}

func (c *Config) defaults() {
	if c.ID == "" && c.Session == nil { // a Session gives its own (UseSession)
		c.ID = defaultID()
	}
	if c.RunTTL == 0 { // a one-shot run's TTL, kept apart from a Session's (UseSession)
		c.RunTTL = cmp.Or(c.TTL, DefaultRunTTL)
	}
	if c.TTL == 0 {
		c.TTL = DefaultTTL
	}
	if c.KeepAlive == 0 {
		c.KeepAlive = c.TTL / 3
	}
	if c.Retry == 0 {
		c.Retry = DefaultRetry
	}
	if !c.JitterSet {
		c.Jitter = c.Retry / 5
	}
	if !c.GraceSet {
		c.Grace = DefaultGrace
	}
	if c.Logger == nil {
		c.Logger = discard
	}
	if c.Patience == 0 {
		c.Patience = 2 * c.Retry
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// UseSession takes the ID, TTL and keep-alive of the Session the options
// gave, if any, which must be on b.
func (c *Config) UseSession(b backends.Backend) error {
	s := c.Session
	if s == nil {
		return nil
	}
	if !same(s.backend, b) {
		return fmt.Errorf("%w: the session is on another backend", ErrInvalid)
	}
	c.ID, c.TTL, c.KeepAlive = s.cfg.ID, s.cfg.TTL, s.cfg.KeepAlive
	return nil
}

// MarginFor returns the safety margin for a lease of d.
func (c *Config) MarginFor(d time.Duration) time.Duration {
	if c.MarginSet {
		return c.Margin
	}
	return d / 10
}

// renewalSlack is how long a renewal may take before the leaders of its
// session revoke: the TTL less the safety margin and the keep-alive
// interval; zero if the options leave none.
func (c *Config) renewalSlack() time.Duration {
	return max(c.TTL-c.MarginFor(c.TTL)-c.KeepAlive, 0)
}

// ValidateElector checks the options a long-lived campaign uses.
func (c *Config) ValidateElector() error {
	if len(c.Bad) > 0 {
		return c.Bad[0]
	}
	switch {
	case c.TTL < MinTTL:
		return fmt.Errorf("%w: TTL %v is too short to hold a lock (a campaign renews every third of it): the shortest that works is %v", ErrInvalid, c.TTL, MinTTL)
	case c.KeepAlive >= c.TTL-c.MarginFor(c.TTL) && c.MarginFor(c.TTL) < c.TTL:
		return fmt.Errorf("%w: safety margin %v leaves no room to renew the TTL %v every %v: it must be under %v", ErrInvalid, c.MarginFor(c.TTL), c.TTL, c.KeepAlive, c.TTL-c.KeepAlive)
	case c.Grace < 0:
		return fmt.Errorf("%w: grace %v must be ≥ 0", ErrInvalid, c.Grace)
	}
	if err := c.ValidateCommon(c.TTL); err != nil {
		return err
	}
	if c.Patience < 0 || c.Preempt < 0 || c.Rotation < 0 {
		return fmt.Errorf("%w: patience %v, preemption %v and rotation %v must be ≥ 0", ErrInvalid, c.Patience, c.Preempt, c.Rotation)
	}
	return nil
}

// ValidateOneShot checks the options a one-shot run uses.
func (c *Config) ValidateOneShot() error {
	if len(c.Bad) > 0 {
		return c.Bad[0]
	}
	switch {
	case c.RunTTL < 0:
		return fmt.Errorf("%w: TTL %v must be > 0", ErrInvalid, c.RunTTL)
	case c.Wait < 0:
		return fmt.Errorf("%w: wait %v must be ≥ 0", ErrInvalid, c.Wait)
	case c.MinHold < 0:
		return fmt.Errorf("%w: minimum hold %v must be ≥ 0", ErrInvalid, c.MinHold)
	}
	return c.ValidateCommon(c.RunTTL)
}

// ValidateCommon checks retry, jitter and the margin against a lease.
func (c *Config) ValidateCommon(lease time.Duration) error {
	m := c.MarginFor(lease)
	switch {
	case c.Retry < 0:
		return fmt.Errorf("%w: retry %v must be > 0", ErrInvalid, c.Retry)
	case c.Jitter < 0:
		return fmt.Errorf("%w: jitter %v must be ≥ 0", ErrInvalid, c.Jitter)
	case m < 0 || m >= lease:
		return fmt.Errorf("%w: safety margin %v must be ≥ 0 and shorter than %v", ErrInvalid, m, lease)
	}
	return nil
}

// RetryPause returns the retry interval plus random jitter.
func (c *Config) RetryPause() time.Duration {
	if c.Jitter <= 0 {
		return c.Retry
	}
	return c.Retry + rand.N(c.Jitter)
}

// backoffDoublings is how many times a run of failures doubles the
// retry interval at most: it pauses for 8 retry intervals at most.
const backoffDoublings = 3

// Backoff returns the pause before the next try after failures backend
// failures in a row: RetryPause after one (or none), then the retry
// interval doubled for each further failure, up to 8 times it,
// with equal jitter (between half and all of it), so that candidates an
// overloaded server turned away do not all come back together.
func (c *Config) Backoff(failures int) time.Duration {
	if failures <= 1 {
		return c.RetryPause()
	}
	d := c.Retry << min(failures-1, backoffDoublings)
	return d/2 + rand.N(d/2+1)
}

// discard is the logger of a campaign given none: one for all, since every
// one-shot run makes a config.
var discard = slog.New(slog.DiscardHandler)

// defaultID returns hostname-pid-random, unique per process start: the
// prefix is made once, and each ID is one allocation (every one-shot run
// without an ID asks for one).
func defaultID() string {
	const hex = "0123456789abcdef"
	p := idPrefix()
	b := make([]byte, len(p)+6)
	copy(b, p)
	for i, r := len(b)-1, rand.Uint32(); i >= len(p); i, r = i-1, r>>4 {
		b[i] = hex[r&0xf]
	}
	return string(b)
}

// idPrefix is "hostname-pid-", read once: on Linux the hostname is three
// system calls (open, read and close of /proc/sys/kernel/hostname).
var idPrefix = sync.OnceValue(func() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "host"
	}
	return fmt.Sprintf("%s-%d-", host, os.Getpid())
})
