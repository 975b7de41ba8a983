package dial

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/hustings/hustings/internal/human"
)

// maxHostLen is the longest host name Hosts takes: the longest DNS name.
const maxHostLen = 253

// Hosts checks a comma-separated host:port list, the host part of a URL
// that names a server or a cluster, and returns its elements.
func Hosts(list string) ([]string, error) {
	if list == "" {
		return nil, errors.New("no host:port")
	}
	hs := strings.Split(list, ",")
	for _, h := range hs {
		host, port, err := net.SplitHostPort(h)
		switch {
		case err != nil:
			return nil, fmt.Errorf("%s is not host:port", shown(h))
		case host == "":
			return nil, fmt.Errorf("%s has no host", shown(h))
		case len(host) > maxHostLen:
			return nil, fmt.Errorf("host name is %d bytes, longer than %d", len(host), maxHostLen)
		}
		if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
			return nil, fmt.Errorf("port %s is not a number from 1 to 65535", shown(port))
		}
	}
	return hs, nil
}

// HostsOf checks a URL that names servers and nothing else but a path,
// scheme://host:port[,host:port…][/path], and returns its hosts (see
// Hosts). User info, a query and a fragment are errors.
func HostsOf(u *url.URL) ([]string, error) {
	switch {
	case u.Opaque != "":
		return nil, fmt.Errorf("no // after %q: write %s://host:port", u.Scheme+":", u.Scheme)
	case u.User != nil:
		return nil, errors.New("user info is not supported (build the client yourself and call the backend's New)")
	case u.RawQuery != "" || u.ForceQuery:
		return nil, errors.New("queries are not supported")
	case u.Fragment != "":
		return nil, errors.New("fragments are not supported")
	}
	return Hosts(u.Host)
}

// Dialer dials TCP with its net.Dialer and remembers why its last dial
// failed: the cause Unreachable reports when a client that retries on its
// own never connected, and hides the reason. It is safe for concurrent
// use.
type Dialer struct {
	net.Dialer
	mu   sync.Mutex
	last error
}

// DialContext dials as net.Dialer.DialContext does, and records the
// error (nil once a dial succeeds). A dial cut off by its context (the
// client gave up, or is shutting down) says nothing of the server: it does
// not replace an earlier dial's error, which names the cause (a refused
// connection, say).
func (d *Dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := d.Dialer.DialContext(ctx, network, addr)
	cutOff := ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded))
	d.mu.Lock()
	if !cutOff || d.last == nil {
		d.last = err
	}
	d.mu.Unlock()
	return c, err
}

// Dial is DialContext without a context (its Timeout bounds it), for
// clients that take a dialer of this form, such as nats.go.
func (d *Dialer) Dial(network, addr string) (net.Conn, error) {
	return d.DialContext(context.Background(), network, addr)
}

// LastErr returns the error of the last dial, nil if it succeeded or none
// was made.
func (d *Dialer) LastErr() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.last
}

// errTimeout is the cause of Open's context when its dial timeout ran out.
var errTimeout = errors.New("dial timeout")

// Unreachable is the one-line error of an Opener's Open whose server did
// not answer, matching ErrUnreachable: the URL target (redacted), how
// long Open waited if the dial timeout ran out, and the cause. Once ctx
// ended, the cause is lastDial if not nil (the last failed dial of a
// client that retries on its own), else err unless it says only that a
// context ended (matches context.DeadlineExceeded or context.Canceled),
// else "no answer"; before, it is err.
func Unreachable(ctx context.Context, c Config, target string, lastDial, err error) error {
	within := ""
	if context.Cause(ctx) == errTimeout {
		within = " within " + human.Duration(c.Timeout)
	}
	cause := err
	if ctx.Err() != nil {
		switch {
		case lastDial != nil:
			cause = lastDial
		case err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled):
			cause = err // what the client saw, such as an i/o timeout
		case context.Cause(ctx) == errTimeout:
			cause = errors.New("no answer")
		default:
			cause = context.Cause(ctx)
		}
	}
	return fmt.Errorf("%w %s%s: %w", ErrUnreachable, target, within, cause)
}
