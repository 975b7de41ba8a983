package record_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/backendtest"
	"github.com/hustings/hustings/backends/internal/record"
	"github.com/hustings/hustings/events"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// mapDriver is the smallest correct Driver: records in maps, on the
// process's clock, a counter for tokens and versions.
type mapDriver struct {
	mu       sync.Mutex
	entries  entries
	n        uint64 // the last token or version given
	sessions map[string]*mapSession
	locks    map[string]record.Lock
}

type mapSession struct {
	candidate string
	ttl       time.Duration
	expires   time.Time
}

func newMapDriver() *mapDriver {
	return &mapDriver{sessions: map[string]*mapSession{}, locks: map[string]record.Lock{}}
}

func (d *mapDriver) alive(sid string, now time.Time) (bool, time.Time) {
	s := d.sessions[sid]
	if s == nil || !s.expires.After(now) {
		return false, time.Time{}
	}
	return true, s.expires
}

func (d *mapDriver) CreateSession(_ context.Context, s record.Session) (uint64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.sessions[s.ID] = &mapSession{candidate: s.Candidate, ttl: s.TTL, expires: time.Now().Add(s.TTL)}
	return 0, nil
}

// Renew finds the session's locks itself, as an index would; it ignores
// held.
func (d *mapDriver) Renew(_ context.Context, rs record.Session, _ []record.Lock) (record.Renewal, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	r := record.Renewal{Now: time.Now()}
	if r.Alive, _ = d.alive(rs.ID, r.Now); !r.Alive {
		return r, nil
	}
	s := d.sessions[rs.ID]
	s.expires = r.Now.Add(s.ttl)
	for _, l := range d.locks {
		if l.Session == rs.ID {
			r.Locks = append(r.Locks, l)
		}
	}
	return r, nil
}

func (d *mapDriver) DeleteSession(_ context.Context, rs record.Session, _ []record.Lock) ([]string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	sid := rs.ID
	delete(d.sessions, sid)
	var freed []string
	for name, l := range d.locks {
		if l.Session == sid && !l.Hold {
			delete(d.locks, name)
			freed = append(freed, name)
		}
	}
	return freed, nil
}

func (d *mapDriver) ReadLock(_ context.Context, name, self string) (record.View, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	v := record.View{Lock: d.locks[name], Now: time.Now()}
	v.HolderAlive, v.HolderExpires = d.alive(v.Lock.Session, v.Now)
	v.SelfAlive, _ = d.alive(self, v.Now)
	return v, nil
}

func (d *mapDriver) write(l record.Lock) record.Lock {
	d.n++
	if l.Token == 0 {
		l.Token = events.Token(d.n)
	}
	l.Version = d.n
	d.locks[l.Name] = l
	return l
}

func (d *mapDriver) CreateLock(_ context.Context, l record.Lock) (record.Lock, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.locks[l.Name]; ok {
		return record.Lock{}, record.ErrConflict
	}
	return d.write(l), nil
}

func (d *mapDriver) SwapLock(_ context.Context, l record.Lock, version uint64) (record.Lock, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.locks[l.Name].Version != version {
		return record.Lock{}, record.ErrConflict
	}
	return d.write(l), nil
}

func (d *mapDriver) DeleteLock(_ context.Context, name string, version uint64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.locks[name].Version != version {
		return record.ErrConflict
	}
	delete(d.locks, name)
	return nil
}

// fence admits a write under token while a live session holds the lock
// under it (not a hold).
func (d *mapDriver) fence(name string, token events.Token) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	l := d.locks[name]
	now := time.Now()
	alive, _ := d.alive(l.Session, now)
	if l.Version == 0 || l.Token != token || l.Hold || !l.Expires.IsZero() && !l.Expires.After(now) || !alive {
		return fmt.Errorf("%w: %q under %d", backends.ErrNotHeld, name, token)
	}
	return nil
}

// store pairs a Store with its driver, for the harness.
type store struct {
	*record.Store
	d *mapDriver
}

func TestContract(t *testing.T) {
	backendtest.Run(t, backendtest.Harness{
		New: func(t *testing.T) backends.Backend {
			d := newMapDriver()
			s, err := record.New(d, record.Config{Name: "map", Poll: 20 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			return store{s, d}
		},
		TTL: time.Second,
		Delete: func(t *testing.T, b backends.Backend, name string) {
			d := b.(store).d
			d.mu.Lock()
			defer d.mu.Unlock()
			delete(d.locks, name)
		},
		Fence: func(_ context.Context, b backends.Backend, name string, token events.Token) error {
			return b.(store).d.fence(name, token)
		},
	})
}

func TestNewRefusesBadInput(t *testing.T) {
	var typedNil *mapDriver
	for _, c := range []struct {
		name string
		d    record.Driver
		c    record.Config
	}{
		{"nil driver", nil, record.Config{Name: "x"}},
		{"no name", newMapDriver(), record.Config{}},
		{"negative poll", newMapDriver(), record.Config{Name: "x", Poll: -1}},
		{"typed nil", typedNil, record.Config{Name: "x"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := record.New(c.d, c.c); err == nil {
				t.Fatalf("New accepted %s", c.name)
			}
		})
	}
}

// racedDriver loses every take, as a lock taken and freed by others
// between each read and write would.
type racedDriver struct{ *mapDriver }

func (racedDriver) CreateLock(context.Context, record.Lock) (record.Lock, error) {
	return record.Lock{}, record.ErrConflict
}

func (racedDriver) SwapLock(context.Context, record.Lock, uint64) (record.Lock, error) {
	return record.Lock{}, record.ErrConflict
}

// TestAcquireLosingEveryRaceIsHeld: an Acquire whose every write lost a
// race is contention (ErrHeld), not a failure of the store.
func TestAcquireLosingEveryRaceIsHeld(t *testing.T) {
	s, err := record.New(racedDriver{newMapDriver()}, record.Config{Name: "raced"})
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.Open(t.Context(), "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Acquire(t.Context(), "raced", 0)
	if !errors.Is(err, backends.ErrHeld) || errors.Is(err, backends.ErrUnavailable) {
		t.Fatalf("Acquire losing every race: %v, want ErrHeld", err)
	}
}

// pairedDriver answers a ReadLock only once a DeleteLock has begun: a
// Release that reads before it removes never returns.
type pairedDriver struct {
	*mapDriver
	deleting chan struct{}
	once     sync.Once
}

func (d *pairedDriver) ReadLock(ctx context.Context, name, self string) (record.View, error) {
	if name == "paired" {
		select {
		case <-d.deleting:
		case <-ctx.Done():
			return record.View{}, ctx.Err()
		}
	}
	return d.mapDriver.ReadLock(ctx, name, self)
}

func (d *pairedDriver) DeleteLock(ctx context.Context, name string, version uint64) error {
	d.once.Do(func() { close(d.deleting) })
	return d.mapDriver.DeleteLock(ctx, name, version)
}

// TestReleaseIsOneRoundTrip: Release without a hold of a lock granted
// with no lease removes its record at the version its take wrote beside
// the read of the session's liveness, not after it.
func TestReleaseIsOneRoundTrip(t *testing.T) {
	d := &pairedDriver{mapDriver: newMapDriver(), deleting: make(chan struct{})}
	s, err := record.New(d, record.Config{Name: "paired"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	a, err := s.Open(ctx, "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	d.once.Do(func() { close(d.deleting) }) // Acquire reads first
	tok, err := a.Acquire(ctx, "paired", 0)
	if err != nil {
		t.Fatal(err)
	}
	d.deleting, d.once = make(chan struct{}), sync.Once{}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := a.Release(rctx, "paired", tok, 0); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if h, err := s.Holder(ctx, "paired"); err != nil || h.ID != "" {
		t.Fatalf("Holder after Release = %+v, %v; want free", h, err)
	}
}

// TestLeaseAndHoldInRange: a lease or hold is a per-key TTL in some
// stores, so it is held to a TTL's range (1ms to validate.MaxTTL).
func TestLeaseAndHoldInRange(t *testing.T) {
	s, err := record.New(newMapDriver(), record.Config{Name: "map"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	a, err := s.Open(ctx, "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	if _, err := a.Acquire(ctx, "long", 8*24*time.Hour); !errors.Is(err, backends.ErrInvalid) {
		t.Fatalf("Acquire with a lease of 8 days: %v, want ErrInvalid", err)
	}
	tok, err := a.Acquire(ctx, "held", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx, "held", tok, time.Microsecond); !errors.Is(err, backends.ErrInvalid) {
		t.Fatalf("Release with a hold of 1µs: %v, want ErrInvalid", err)
	}
}
