package dial

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/memory"
)

// DefaultTimeout is how long Open waits for the server to answer, unless
// WithTimeout says otherwise.
const DefaultTimeout = 5 * time.Second

// Option configures Open.
type Option interface{ apply(*Config) }

type optionFunc func(*Config)

func (f optionFunc) apply(c *Config) { f(c) }

// WithTimeout bounds how long Open waits for the server to answer (the
// dial timeout): a connection and one request (Redis PING, an etcd read,
// a ZooKeeper session). Default DefaultTimeout, 5 s; it must be > 0.
func WithTimeout(d time.Duration) Option { return optionFunc(func(c *Config) { c.Timeout = d }) }

// WithLogger sends the log lines of the client Open makes to l, at debug
// level, with the attribute client (redis, etcd, zookeeper, …). Default:
// discarded. Each opener says how it routes its client's lines (go-redis,
// for one, has a logger per process: see package redisdial).
func WithLogger(l *slog.Logger) Option { return optionFunc(func(c *Config) { c.Logger = l }) }

// Open parses raw and connects; see Target.Open.
func Open(ctx context.Context, raw string, opts ...Option) (b backends.Backend, close func(), err error) {
	t, err := Parse(raw)
	if err != nil {
		return nil, nil, err
	}
	return t.Open(ctx, opts...)
}

// Open connects to the target through its scheme's opener and waits until
// the server answers, at most the dial timeout or until ctx ends, then
// returns the backend and a function that closes its client. The client
// does not depend on ctx once Open returned. Errors match ErrUnreachable
// when the server did not answer, and backends.ErrInvalid for a bad
// option. A Target made by hand is parsed from its String first.
func (t Target) Open(ctx context.Context, opts ...Option) (b backends.Backend, close func(), err error) {
	cfg := Config{Timeout: DefaultTimeout}
	for _, o := range opts {
		if o != nil {
			o.apply(&cfg)
		}
	}
	if cfg.Timeout <= 0 {
		return nil, nil, fmt.Errorf("%w: dial: timeout %v must be > 0", backends.ErrInvalid, cfg.Timeout)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if t.Scheme == "memory" {
		return memory.New(), func() {}, nil
	}
	if t.opener == nil {
		if t, err = Parse(t.String()); err != nil {
			return nil, nil, err
		}
	}
	u, err := url.Parse(t.raw)
	if err != nil {
		return nil, nil, fmt.Errorf("%w %s: %v", ErrURL, t.Redacted(), err)
	}
	ctx, cancel := context.WithTimeoutCause(ctx, cfg.Timeout, errTimeout)
	defer cancel()
	return t.opener.Open(ctx, u, cfg)
}
