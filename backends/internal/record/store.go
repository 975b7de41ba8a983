package record

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/internal/ctxerr"
	"github.com/hustings/hustings/internal/validate"
)

var (
	_ backends.Backend        = (*Store)(nil)
	_ backends.ReleaseWatcher = (*Store)(nil)
)

// Config configures a Store.
type Config struct {
	// Name prefixes the Store's errors ("mysql"). Required.
	Name string
	// Poll is how often the hub re-reads every watched lock when the
	// driver is no Notifier. Default 1s; ignored for a Notifier.
	Poll time.Duration
}

// DefaultPoll is Config.Poll's default.
const DefaultPoll = time.Second

// maxTries bounds how often one call reads and writes again after a
// conflict: each conflict means another writer changed the record.
const maxTries = 8

// Store is a backends.Backend (and Watcher, ReleaseWatcher, Registry)
// over a Driver. Create it with
// New; it is safe for concurrent use.
type Store struct {
	d    Driver
	name string
	hub  transport
}

// New returns a Store on d. It does no I/O and starts no goroutine. A nil
// driver (typed or not), an empty name or a negative Poll is ErrInvalid.
func New(d Driver, c Config) (*Store, error) {
	if d == nil || isNil(d) || c.Name == "" {
		return nil, fmt.Errorf("%w: record: a driver and a name are required", backends.ErrInvalid)
	}
	if c.Poll < 0 {
		return nil, fmt.Errorf("%w: %s: poll %v must be ≥ 0", backends.ErrInvalid, c.Name, c.Poll)
	}
	if c.Poll == 0 {
		c.Poll = DefaultPoll
	}
	s := &Store{d: d, name: c.Name}
	n, _ := d.(Notifier)
	s.hub.init(s, c.Poll, n)
	return s, nil
}

// isNil reports a typed nil pointer in an interface.
func isNil(d Driver) bool {
	v := reflect.ValueOf(d)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// Open writes a new session record for candidate id that lives ttl.
func (s *Store) Open(ctx context.Context, id string, ttl time.Duration) (backends.Session, error) {
	if err := validate.Session(id, ttl); err != nil {
		return nil, err
	}
	var r [16]byte
	_, _ = crand.Read(r[:]) // never fails
	ss := &session{s: s, id: id, sid: hex.EncodeToString(r[:]), ttl: ttl, since: time.Now()}
	err := s.call(ctx, "open", func() (err error) {
		ss.version, err = s.d.CreateSession(ctx, Session{ID: ss.sid, Candidate: id, TTL: ttl})
		return err
	})
	if err != nil {
		return nil, err
	}
	return ss, nil
}

// Holder reports who holds name: one ReadLock. A hold reports the
// releasing candidate until it ends.
func (s *Store) Holder(ctx context.Context, name string) (backends.Holder, error) {
	if err := validate.Name(name); err != nil {
		return backends.Holder{}, err
	}
	var v View
	err := s.call(ctx, "holder", func() (err error) {
		v, err = s.d.ReadLock(ctx, name, "")
		return err
	})
	if err != nil || !live(v) {
		return backends.Holder{}, err
	}
	return holderOf(v), nil
}

// holderOf is the Holder of the live lock of v: its Expires is the
// lock's own (a lease, a hold) or its session's, whichever comes first.
func holderOf(v View) backends.Holder {
	h := backends.Holder{ID: v.Lock.Candidate, Token: v.Lock.Token, Expires: v.Lock.Expires}
	if v.Lock.Hold {
		return h
	}
	h.Session = v.Lock.Session
	if e := v.HolderExpires; !e.IsZero() && (h.Expires.IsZero() || e.Before(h.Expires)) {
		h.Expires = e
	}
	return h
}

// live reports whether v's lock is held: a record, not past its Expires,
// and a hold or named by a living session.
func live(v View) bool {
	l := v.Lock
	return l.Version != 0 && (l.Expires.IsZero() || l.Expires.After(v.Now)) && (l.Hold || v.HolderAlive)
}

// call runs op once, translating its error; a call whose ctx is done is
// not made.
func (s *Store) call(ctx context.Context, op string, f func() error) error {
	if err := ctx.Err(); err != nil {
		return s.unavailable(ctx, op, err)
	}
	if err := f(); err != nil {
		return s.unavailable(ctx, op, err)
	}
	return nil
}

// retry runs try until it reports done, again after a conflict (bounded,
// with a short jittered pause); a conflict on every try is ErrUnavailable.
func (s *Store) retry(ctx context.Context, op string, try func() (done bool, err error)) error {
	for n := range maxTries {
		var done bool
		err := s.call(ctx, op, func() (err error) {
			done, err = try()
			return err
		})
		if err != nil && !errors.Is(err, ErrConflict) || done {
			return err
		}
		select {
		case <-time.After(time.Duration(1+rand.IntN(1<<n)) * time.Millisecond):
		case <-ctx.Done():
			return s.unavailable(ctx, op, ctx.Err())
		}
	}
	return fmt.Errorf("%w: %s: %s: %w", backends.ErrUnavailable, s.name, op, errContended)
}

// errContended is retry's error when every try conflicted: other writers
// changed the record each time.
var errContended = fmt.Errorf("%d conflicting writes in a row", maxTries)

// unavailable wraps err in backends.ErrUnavailable, unless it is a
// conflict or matches another sentinel of package backends already, and in ctx's
// error too when ctx ended.
func (s *Store) unavailable(ctx context.Context, op string, err error) error {
	for _, known := range []error{ErrConflict, backends.ErrInvalid, backends.ErrHeld, backends.ErrNotHeld, backends.ErrSessionLost, backends.ErrSessionClosed} {
		if errors.Is(err, known) {
			return err
		}
	}
	cerr := ctxerr.Of(ctx, err)
	switch {
	case errors.Is(err, backends.ErrUnavailable) && (cerr == nil || errors.Is(err, cerr)):
		return err
	case cerr != nil && !errors.Is(err, cerr):
		return fmt.Errorf("%w: %s: %s: %w (%w)", backends.ErrUnavailable, s.name, op, err, cerr)
	}
	return fmt.Errorf("%w: %s: %s: %w", backends.ErrUnavailable, s.name, op, err)
}
