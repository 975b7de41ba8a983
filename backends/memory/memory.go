package memory

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/validate"
	"github.com/hustings/hustings/strategy"
)

var (
	_ backends.Backend = (*Backend)(nil)
)

// Clock tells the time. It must be safe for concurrent use and must not go
// backwards.
type Clock interface {
	Now() time.Time
}

// systemClock reads time.Now at each call, so it follows the virtual clock
// of testing/synctest too.
type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// Option configures a Backend.
type Option interface {
	apply(*Backend)
}

type optionFunc func(*Backend)

func (f optionFunc) apply(b *Backend) { f(b) }

// WithClock makes the Backend read the time from c, for example a fake
// clock in tests. The default is the time package's clock, read at each
// use. A nil c keeps the default.
func WithClock(c Clock) Option {
	return optionFunc(func(b *Backend) {
		if c != nil {
			b.clock = c
		}
	})
}

// Backend is an in-process store of named locks. Create it with New; the
// zero value is not usable. It is safe for concurrent use.
type Backend struct {
	clock Clock

	mu      sync.Mutex
	locks   map[string]*lock
	last    events.Token // the last token given, to any name: tokens increase across names too
	watches map[string]map[chan struct{}]struct{}
	cut     map[string]chan struct{} // partitioned IDs; closed on Heal
	cutAll  chan struct{}            // non-nil while partitioned; closed on HealAll
	open    map[*session]struct{}    // sessions not known ended, for Expire
	pruned  int                      // len(open) after its last prune
	groups  map[string]map[*session]strategy.Candidate
	orders  map[string]uint64 // last registration order per group; never reset
}

// lock is one held lock. A lock released with a hold has no session.
type lock struct {
	sess  *session
	id    string
	token events.Token
	until time.Time // end of the lease or of the hold; zero for none
}

// live reports whether the lock is still held at now.
func (l *lock) live(now time.Time) bool {
	if !l.until.IsZero() && !now.Before(l.until) {
		return false
	}
	return l.sess == nil || l.sess.alive(now)
}

// New returns an empty Backend. It starts no goroutine.
func New(opts ...Option) *Backend {
	b := &Backend{
		clock:   systemClock{},
		locks:   make(map[string]*lock),
		watches: make(map[string]map[chan struct{}]struct{}),
		cut:     make(map[string]chan struct{}),
		open:    make(map[*session]struct{}),
		groups:  make(map[string]map[*session]strategy.Candidate),
		orders:  make(map[string]uint64),
	}
	for _, o := range opts {
		if o != nil {
			o.apply(b)
		}
	}
	return b
}

// Open starts a session for candidate id that lives ttl after now and
// after each successful KeepAlive. It returns an error matching
// backends.ErrInvalid for an empty id or a ttl ≤ 0.
func (b *Backend) Open(ctx context.Context, id string, ttl time.Duration) (backends.Session, error) {
	if err := validate.Session(id, ttl); err != nil {
		return nil, err
	}
	if err := b.reach(ctx, id); err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s := &session{
		b:     b,
		id:    id,
		ttl:   ttl,
		locks: make(map[string]*lock),
	}
	now := b.clock.Now()
	s.expires = now.Add(ttl)
	b.track(s, now)
	return s, nil
}

// track adds s to the open sessions. Sessions that expired unseen (no
// call found them dead) are dropped once the set has doubled since the
// last look, so that it costs O(1) per Open over time. b.mu must be held.
func (b *Backend) track(s *session, now time.Time) {
	b.open[s] = struct{}{}
	if len(b.open) < 2*b.pruned+64 {
		return
	}
	for o := range b.open {
		if !o.alive(now) {
			delete(b.open, o) // its locks are found dead by lookup
		}
	}
	b.pruned = len(b.open)
}

// Holder reports who holds the lock name; a zero Holder means it is free.
// A lock released with a hold reports the releasing candidate until the
// hold ends.
func (b *Backend) Holder(ctx context.Context, name string) (backends.Holder, error) {
	if err := validate.Name(name); err != nil {
		return backends.Holder{}, err
	}
	if err := b.reach(ctx, ""); err != nil {
		return backends.Holder{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	l := b.lookup(name, b.clock.Now())
	if l == nil {
		return backends.Holder{}, nil
	}
	h := backends.Holder{ID: l.id, Token: l.token, Expires: l.until}
	if l.sess != nil && (h.Expires.IsZero() || l.sess.expires.Before(h.Expires)) {
		h.Expires = l.sess.expires
	}
	return h, nil
}

// List returns the names of the live locks that start with prefix,
// sorted: one pass over every lock the Backend keeps.
func (b *Backend) List(ctx context.Context, prefix string) ([]string, error) {
	if err := b.reach(ctx, ""); err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var names []string
	for name := range b.locks {
		if strings.HasPrefix(name, prefix) {
			names = append(names, name)
		}
	}
	now := b.clock.Now()
	names = slices.DeleteFunc(names, func(name string) bool { return b.lookup(name, now) == nil })
	slices.Sort(names)
	return names, nil
}

// lookup returns the live lock name, or nil if it is free. A lock found
// dead is removed and its watchers are woken. b.mu must be held.
func (b *Backend) lookup(name string, now time.Time) *lock {
	l := b.locks[name]
	if l == nil {
		return nil
	}
	if !l.live(now) {
		b.remove(name, l)
		return nil
	}
	return l
}

// take gives the free lock name to s with the next fencing token. b.mu
// must be held.
func (b *Backend) take(s *session, name string, lease time.Duration, now time.Time) events.Token {
	b.last++
	l := &lock{sess: s, id: s.id, token: b.last}
	if lease > 0 {
		l.until = now.Add(lease)
	}
	b.locks[name] = l
	s.locks[name] = l
	b.signal(name)
	return l.token
}

// remove deletes lock l of name from the store and from its session, and
// wakes the watchers of name. b.mu must be held.
func (b *Backend) remove(name string, l *lock) {
	if b.locks[name] == l {
		delete(b.locks, name)
	}
	if l.sess != nil && l.sess.locks[name] == l {
		delete(l.sess.locks, name)
	}
	b.signal(name)
}

// heldErr is the error for name held by l.
func heldErr(name string, l *lock) error {
	return fmt.Errorf("%w: %q by %s", backends.ErrHeld, name, l.id)
}

// Fence runs write only while the lock name is held under token, with
// the backend's state held still: no other term of name can begin, and
// the holder cannot lose the lock, until write returns. It is the memory
// backend's native fence, for tests and demos of code that fences its
// writes (the other backends check the lock in the same transaction as
// the write). A lock held under another token, free, released with a
// hold, or token 0 returns an error matching backends.ErrNotHeld, and
// write does not run; otherwise Fence returns write's error. write must
// not call b: it runs under b's lock. Fenced writes run one at a time.
func (b *Backend) Fence(ctx context.Context, name string, token events.Token, write func() error) error {
	if err := validate.Name(name); err != nil {
		return err
	}
	if write == nil {
		return fmt.Errorf("%w: memory: fence: nil write", backends.ErrInvalid)
	}
	if err := b.reach(ctx, ""); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	l := b.lookup(name, b.clock.Now())
	if token == 0 || l == nil || l.sess == nil || l.token != token {
		return fmt.Errorf("%w: memory: %q is not held under token %d", backends.ErrNotHeld, name, token)
	}
	return write()
}
