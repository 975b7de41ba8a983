package memberlist

import (
	"fmt"
	"log"
	"log/slog"
	"net"
	"time"

	hmemberlist "github.com/hashicorp/memberlist"
)

// Defaults, in one place; they are memberlist's LAN settings where it has
// one.
const (
	DefaultBindAddr         = "127.0.0.1"            // listen on loopback only
	DefaultGossipInterval   = 200 * time.Millisecond // between gossip rounds
	DefaultProbeInterval    = time.Second            // between failure-detector probes
	DefaultPushPullInterval = 30 * time.Second       // between full-state exchanges
	DefaultTCPTimeout       = 10 * time.Second       // per join, push-pull or TCP probe
	DefaultBroadcastTimeout = 2 * time.Second        // wait for an update or a leave to go out
)

const (
	reclaimIntervals  = 10 // probe intervals before a dead node's name may move
	probeTimeoutRatio = 2  // probe timeout = probe interval / 2, as in LAN
)

// Option configures a Node. Options are made only by the With* functions.
type Option interface {
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// config holds every option; New validates it.
type config struct {
	bindAddr  string
	bindPort  int
	gossip    time.Duration
	probe     time.Duration
	pushPull  time.Duration
	tcp       time.Duration
	broadcast time.Duration
	logger    *slog.Logger
}

func newConfig(opts []Option) config {
	c := config{
		bindAddr:  DefaultBindAddr,
		gossip:    DefaultGossipInterval,
		probe:     DefaultProbeInterval,
		pushPull:  DefaultPushPullInterval,
		tcp:       DefaultTCPTimeout,
		broadcast: DefaultBroadcastTimeout,
	}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	if c.logger == nil {
		c.logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// validate names the first bad setting.
func (c *config) validate() error {
	if net.ParseIP(c.bindAddr) == nil {
		return fmt.Errorf("%w: bind address %q is not an IP address", ErrInvalid, c.bindAddr)
	}
	if c.bindPort < 0 || c.bindPort > 65535 {
		return fmt.Errorf("%w: bind port %d is outside 0–65535", ErrInvalid, c.bindPort)
	}
	for _, d := range []struct {
		name string
		d    time.Duration
	}{
		{"gossip interval", c.gossip}, {"probe interval", c.probe}, {"push-pull interval", c.pushPull},
		{"TCP timeout", c.tcp}, {"broadcast timeout", c.broadcast},
	} {
		if d.d <= 0 {
			return fmt.Errorf("%w: %s %v must be > 0", ErrInvalid, d.name, d.d)
		}
	}
	return nil
}

// WithBindAddr sets the IP address the node listens on (TCP and UDP) and,
// unless it is unspecified (0.0.0.0 or ::), advertises to the others; with
// an unspecified address memberlist advertises a private address of the
// host. Default 127.0.0.1: a node is local until told otherwise.
func WithBindAddr(ip string) Option { return optionFunc(func(c *config) { c.bindAddr = ip }) }

// WithBindPort sets the port the node listens on, the same for TCP and
// UDP. Default 0: a free port, chosen at Start (see Node.Addr).
func WithBindPort(port int) Option { return optionFunc(func(c *config) { c.bindPort = port }) }

// WithGossipInterval sets how often the node gossips queued updates (its
// own entries, joins and failures) to a few random peers: it bounds how
// fast a change spreads. Default 200ms.
func WithGossipInterval(d time.Duration) Option {
	return optionFunc(func(c *config) { c.gossip = d })
}

// WithProbeInterval sets how often the failure detector probes a random
// peer; a probe times out after half of it. A failed node is marked dead a
// few probe intervals (scaled by the log of the cluster size) after it
// stops answering. Default 1s.
func WithProbeInterval(d time.Duration) Option {
	return optionFunc(func(c *config) { c.probe = d })
}

// WithPushPullInterval sets how often the node exchanges its full state
// with a random peer over TCP, which repairs anything gossip lost and heals
// partitions. Default 30s.
func WithPushPullInterval(d time.Duration) Option {
	return optionFunc(func(c *config) { c.pushPull = d })
}

// WithTCPTimeout bounds each TCP exchange: a join with one seed, a
// push-pull, a fallback probe. Default 10s.
func WithTCPTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.tcp = d })
}

// WithBroadcastTimeout bounds how long Register, Deregister, Announce and
// Withdraw wait for their update to be gossiped, and how long Close waits
// for the leave to be. Default 2s.
func WithBroadcastTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.broadcast = d })
}

// WithLogger sets the logger for the node and for memberlist's own log
// lines, which go to it at their level ([DEBUG], [INFO], [WARN], [ERR]).
// Default: nothing is logged.
func WithLogger(l *slog.Logger) Option { return optionFunc(func(c *config) { c.logger = l }) }

// memberlist returns memberlist's configuration: its LAN defaults, with
// this package's settings, delegates and logger.
func (c *config) memberlist(id string, d hmemberlist.Delegate, ev hmemberlist.EventDelegate) *hmemberlist.Config {
	m := hmemberlist.DefaultLANConfig()
	m.Name = id
	m.BindAddr, m.BindPort, m.AdvertisePort = c.bindAddr, c.bindPort, c.bindPort
	if ip := net.ParseIP(c.bindAddr); !ip.IsUnspecified() {
		m.AdvertiseAddr = c.bindAddr
	}
	m.GossipInterval = c.gossip
	m.ProbeInterval, m.ProbeTimeout = c.probe, c.probe/probeTimeoutRatio
	m.PushPullInterval = c.pushPull
	m.TCPTimeout = c.tcp
	// A process that crashed and comes back under the same ID on another
	// port may take its name back once the old one has been dead a while.
	m.DeadNodeReclaimTime = reclaimIntervals * c.probe
	m.Delegate, m.Events = d, ev
	m.Logger = log.New(logWriter{c.logger}, "", 0)
	return m
}
