package dial

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hustings/hustings/backends"
)

// Opener opens the backends of a URL scheme that a package registered
// with Register. Its methods are called concurrently and must be safe
// for concurrent use.
type Opener interface {
	// Check reports whether u names a backend this opener can open,
	// without connecting. Parse (and so Open) wraps its error in
	// ErrURL.
	Check(u *url.URL) error
	// Open connects to the backend u names, waits until it answers (at
	// most until ctx ends: Open gives ctx the dial timeout), and returns
	// it with a function that closes the client it made.
	Open(ctx context.Context, u *url.URL, c Config) (backends.Backend, func(), error)
}

// Describer is an Opener that also says what a URL names. Parse calls
// Describe instead of Check when the opener has it, and takes the
// exported fields of the Target it returns (Scheme, if empty, is the
// URL's). Parse wraps its error in ErrURL, as Check's.
type Describer interface {
	Describe(u *url.URL) (Target, error)
}

// Usager is an Opener that writes its URLs for help texts (see Usage):
// Usage returns the form of a URL of scheme, such as
// "redis://host:port[/db]", or "" to leave scheme out of the list (the
// alias of a scheme listed already).
type Usager interface {
	Usage(scheme string) string
}

// Config is what Open's options set, as an Opener sees it.
type Config struct {
	// Timeout is the dial timeout, > 0; ctx already ends at it.
	Timeout time.Duration
	// Logger takes the client's log lines at debug level; never nil.
	Logger *slog.Logger
}

// builtin are the schemes of this package's own; Register refuses them.
var builtin = []string{"memory"}

var registry struct {
	mu      sync.RWMutex
	openers map[string]Opener
	dup     map[string]error // schemes registered twice, refused at use
}

// Register makes Open and Parse accept URLs of scheme (compared case
// insensitively), opened by o; a package that implements a backend calls
// it from its init. A second registration of a scheme is a programmer
// error: the first opener stays, Register returns an error matching
// backends.ErrInvalid, and every later Parse of that scheme fails with it,
// so the mistake shows at first use even if init dropped the error.
// Empty schemes, memory and a nil o are refused the same way.
func Register(scheme string, o Opener) error {
	scheme = strings.ToLower(scheme)
	registry.mu.Lock()
	defer registry.mu.Unlock()
	switch {
	case scheme == "" || strings.ContainsAny(scheme, ":/?#"):
		return fmt.Errorf("%w: dial: scheme %q cannot be registered", backends.ErrInvalid, scheme)
	case o == nil:
		return fmt.Errorf("%w: dial: scheme %q registered with a nil opener", backends.ErrInvalid, scheme)
	case slices.Contains(builtin, scheme):
		return fmt.Errorf("%w: dial: scheme %q is built in", backends.ErrInvalid, scheme)
	}
	if _, ok := registry.openers[scheme]; ok {
		err := fmt.Errorf("%w: dial: scheme %q registered twice", backends.ErrInvalid, scheme)
		if registry.dup == nil {
			registry.dup = map[string]error{}
		}
		registry.dup[scheme] = err
		return err
	}
	if registry.openers == nil {
		registry.openers = map[string]Opener{}
	}
	registry.openers[scheme] = o
	return nil
}

// Schemes returns the registered schemes, sorted, without memory (which
// Usage lists too).
func Schemes() []string {
	registry.mu.RLock()
	defer registry.mu.RUnlock()
	s := make([]string, 0, len(registry.openers))
	for k := range registry.openers {
		s = append(s, k)
	}
	slices.Sort(s)
	return s
}

// opener returns the opener of scheme (in lower case), or the error of a
// duplicate registration, or nil and no error for an unknown scheme.
func opener(scheme string) (Opener, error) {
	registry.mu.RLock()
	defer registry.mu.RUnlock()
	if err := registry.dup[scheme]; err != nil {
		return nil, err
	}
	return registry.openers[scheme], nil
}
