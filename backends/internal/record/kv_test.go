package record_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/backendtest"
	"github.com/hustings/hustings/backends/internal/record"
	"github.com/hustings/hustings/events"
)

// kvDriver is a key-value store as NATS JetStream KV or DynamoDB keep
// one: every record a key with a version (one counter for the store),
// expired by the store itself by a per-key TTL (it reads no expiry:
// Expires is never reported), found by its key alone (Renew reads the
// held locks by name), a session record written only on its last
// version, removals that leave a marker with a version, and a feed of
// every write, removals and expiries included (a record.Notifier).
type kvDriver struct {
	mu      sync.Mutex
	entries entries
	n       uint64
	keys    map[string]kvKey // "s/<sid>" or "l/<name>"
	log     []kvChange       // every change, for the feeds

	renews, reads int // Renew calls, and those that read locks
	// lax keeps session records this long past their TTL, as Consul may
	// (it invalidates a session up to 2×TTL after its last renewal).
	lax time.Duration
}

type kvKey struct {
	lock      record.Lock // a lock record (a marker: no Session, no Hold)
	candidate string      // a session record's
	ttl       time.Duration
	expires   time.Time // zero: never
	version   uint64
}

type kvChange struct {
	lock  record.Lock
	ended string // a session record's end
}

var _ record.Notifier = (*kvDriver)(nil)

func newKV() *kvDriver { return &kvDriver{keys: map[string]kvKey{}} }

// sweepLocked expires keys past their TTL, as the store does on its own.
func (d *kvDriver) sweepLocked() {
	now := time.Now()
	for key, k := range d.keys {
		if k.expires.IsZero() || k.expires.After(now) {
			continue
		}
		if key[0] == 's' {
			delete(d.keys, key)
			d.log = append(d.log, kvChange{ended: key[2:]})
		} else {
			d.markLocked(k.lock.Name)
		}
	}
}

// markLocked removes lock name's record, leaving a marker.
func (d *kvDriver) markLocked(name string) {
	d.n++
	m := record.Lock{Name: name, Version: d.n}
	d.keys["l/"+name] = kvKey{lock: m, version: d.n}
	d.log = append(d.log, kvChange{lock: m})
}

func (d *kvDriver) CreateSession(_ context.Context, s record.Session) (uint64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.n++
	d.keys["s/"+s.ID] = kvKey{candidate: s.Candidate, ttl: s.TTL, expires: time.Now().Add(s.TTL + d.lax), version: d.n}
	return d.n, nil
}

func (d *kvDriver) Renew(_ context.Context, s record.Session, held []record.Lock) (record.Renewal, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.sweepLocked()
	d.renews++
	if len(held) > 0 {
		d.reads++
	}
	r := record.Renewal{Now: time.Now()}
	k, ok := d.keys["s/"+s.ID]
	if !ok {
		return r, nil
	}
	if k.version != s.Version {
		return r, fmt.Errorf("session %s at version %d, not %d", s.ID, k.version, s.Version)
	}
	d.n++
	k.version, k.expires = d.n, r.Now.Add(k.ttl+d.lax)
	d.keys["s/"+s.ID] = k
	r.Alive, r.Version = true, d.n
	for _, h := range held {
		if l := d.keys["l/"+h.Name].lock; l.Session == s.ID {
			r.Locks = append(r.Locks, l)
		}
	}
	return r, nil
}

func (d *kvDriver) DeleteSession(_ context.Context, s record.Session, held []record.Lock) ([]string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.sweepLocked()
	var freed []string
	for _, h := range held {
		if l := d.keys["l/"+h.Name].lock; l.Session == s.ID && !l.Hold {
			d.markLocked(h.Name)
			freed = append(freed, h.Name)
		}
	}
	if _, ok := d.keys["s/"+s.ID]; !ok {
		return freed, backends.ErrSessionLost
	}
	delete(d.keys, "s/"+s.ID)
	d.log = append(d.log, kvChange{ended: s.ID})
	return freed, nil
}

func (d *kvDriver) ReadLock(_ context.Context, name, self string) (record.View, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.sweepLocked()
	v := record.View{Lock: d.keys["l/"+name].lock, Now: time.Now()}
	_, v.HolderAlive = d.keys["s/"+v.Lock.Session]
	_, v.SelfAlive = d.keys["s/"+self]
	return v, nil
}

func (d *kvDriver) writeLocked(l record.Lock) record.Lock {
	d.n++
	l.Version, l.Expires = d.n, time.Time{}
	if l.Token == 0 {
		l.Token = events.Token(d.n)
	}
	k := kvKey{lock: l, version: d.n}
	if l.TTL > 0 {
		k.expires = time.Now().Add(l.TTL)
	}
	k.lock.TTL = 0
	d.keys["l/"+l.Name] = k
	d.log = append(d.log, kvChange{lock: k.lock})
	return k.lock
}

func (d *kvDriver) CreateLock(_ context.Context, l record.Lock) (record.Lock, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.sweepLocked()
	if _, ok := d.keys["l/"+l.Name]; ok {
		return record.Lock{}, record.ErrConflict
	}
	return d.writeLocked(l), nil
}

func (d *kvDriver) SwapLock(_ context.Context, l record.Lock, version uint64) (record.Lock, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.sweepLocked()
	if d.keys["l/"+l.Name].version != version {
		return record.Lock{}, record.ErrConflict
	}
	return d.writeLocked(l), nil
}

func (d *kvDriver) DeleteLock(_ context.Context, name string, version uint64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.sweepLocked()
	if d.keys["l/"+name].version != version {
		return record.ErrConflict
	}
	d.markLocked(name)
	return nil
}

// Notify delivers the log from its end at the call on, every 2ms, and
// reports its progress in the store's one sequence.
func (d *kvDriver) Notify(ctx context.Context, f *record.Feed) error {
	d.mu.Lock()
	next := len(d.log)
	d.mu.Unlock()
	f.Ready()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		d.mu.Lock()
		d.sweepLocked()
		batch, n := d.log[next:], d.n
		next = len(d.log)
		d.mu.Unlock()
		for _, c := range batch {
			if c.ended != "" {
				f.Ended(c.ended)
			} else {
				f.Changed(c.lock)
			}
		}
		f.Progress(n)
	}
}

// fence admits a write under token while the lock is held under it by a
// live session.
func (d *kvDriver) fence(name string, token events.Token) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.sweepLocked()
	l := d.keys["l/"+name].lock
	if _, alive := d.keys["s/"+l.Session]; !alive || l.Token != token || l.Hold {
		return fmt.Errorf("%w: %q under %d", backends.ErrNotHeld, name, token)
	}
	return nil
}

type kvStore struct {
	*record.Store
	d *kvDriver
}

func newKVStore(t *testing.T) kvStore {
	d := newKV()
	s, err := record.New(d, record.Config{Name: "kv"})
	if err != nil {
		t.Fatal(err)
	}
	return kvStore{s, d}
}

// TestContractKV runs the contract suite on a store that expires records
// by per-key TTLs (Lock.TTL), finds locks by name only (Renew's held),
// writes a session record only on its version (Session.Version), and
// pushes every change (Feed: Watch, WatchReleases, Losses).
func TestContractKV(t *testing.T) {
	backendtest.Run(t, backendtest.Harness{
		New: func(t *testing.T) backends.Backend { return newKVStore(t) },
		TTL: time.Second,
		Delete: func(t *testing.T, b backends.Backend, name string) {
			d := b.(kvStore).d
			d.mu.Lock()
			defer d.mu.Unlock()
			d.markLocked(name)
		},
		Fence: func(_ context.Context, b backends.Backend, name string, token events.Token) error {
			return b.(kvStore).d.fence(name, token)
		},
	})
}

// TestCrashedHolderIsPushed: on a store that reads no expiry, the end of
// the holder's session record (Feed.Ended) wakes the lock's watchers:
// nothing writes the lock's record, and no timer is due.
func TestCrashedHolderIsPushed(t *testing.T) {
	s := newKVStore(t)
	ctx := t.Context()
	a, err := s.Open(ctx, "a", 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Acquire(ctx, "crash", 0); err != nil {
		t.Fatal(err)
	}
	var chs []<-chan struct{}
	for _, watch := range []func(context.Context, string) (<-chan struct{}, error){s.Watch, s.WatchReleases} {
		ch, err := watch(ctx, "crash")
		if err != nil {
			t.Fatal(err)
		}
		chs = append(chs, ch)
	}
	for _, ch := range chs {
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatal("no wake-up within 10s of the holder's expiry")
		}
	}
	if h, err := s.Holder(ctx, "crash"); err != nil || h.ID != "" {
		t.Fatalf("Holder when woken = %+v, %v; want free", h, err)
	}
}

// TestSessionEndIsPushedLoss: the end of a session's record, pushed by
// the feed, moves every lock it holds to Lost with no KeepAlive.
func TestSessionEndIsPushedLoss(t *testing.T) {
	s := newKVStore(t)
	ctx := t.Context()
	a, err := s.Open(ctx, "a", 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	losses := a.Losses()
	tok, err := a.Acquire(ctx, "ends", 0)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-losses:
	case <-time.After(10 * time.Second):
		t.Fatal("no loss pushed within 10s of the session's expiry")
	}
	if lost := a.Lost(); lost["ends"] != tok {
		t.Fatalf("Lost() = %v, want ends:%d", lost, tok)
	}
	if err := a.KeepAlive(ctx); !errors.Is(err, backends.ErrSessionLost) {
		t.Fatalf("KeepAlive after the expiry: %v, want ErrSessionLost", err)
	}
	_ = a.Close(ctx)
}

// TestKeepAliveConfirmedByFeed: a pushed session whose locks the feed has
// covered since their takes renews alone (Renew given no held locks) and
// confirms them by the feed's progress; a lock deleted behind its back is
// still reported.
func TestKeepAliveConfirmedByFeed(t *testing.T) {
	s := newKVStore(t)
	ctx := t.Context()
	a, err := s.Open(ctx, "a", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	losses := a.Losses()
	names := backendtest.Names("covered", 20)
	backendtest.AcquireAtOnce(t, a, names)
	// The feed reports its first progress within a tick of the takes.
	for deadline := time.Now().Add(10 * time.Second); ; {
		s.d.mu.Lock()
		s.d.renews, s.d.reads = 0, 0
		s.d.mu.Unlock()
		if err := a.KeepAlive(ctx); err != nil {
			t.Fatal(err)
		}
		s.d.mu.Lock()
		renews, reads := s.d.renews, s.d.reads
		s.d.mu.Unlock()
		if renews == 1 && reads == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a keep-alive of covered locks: %d renewals, %d reading locks; want 1, 0", renews, reads)
		}
	}
	s.d.mu.Lock()
	s.d.markLocked(names[3])
	s.d.mu.Unlock()
	select {
	case <-losses:
	case <-time.After(10 * time.Second):
		t.Fatal("no loss pushed within 10s of the delete")
	}
	if err := a.KeepAlive(ctx); err != nil {
		t.Fatal(err)
	}
	if lost := a.Lost(); len(lost) != 1 || lost[names[3]] == 0 {
		t.Fatalf("Lost() = %v, want only %s", lost, names[3])
	}
}

// slowStop is a kvDriver whose feed takes a while to stop, as a client
// reconnecting does.
type slowStop struct {
	*kvDriver
	returned atomic.Bool
}

func (d *slowStop) Notify(ctx context.Context, f *record.Feed) error {
	err := d.kvDriver.Notify(ctx, f)
	time.Sleep(50 * time.Millisecond) // in the test's synctest bubble: a slow stop that takes no real time
	d.returned.Store(true)
	return err
}

// TestCloseWaitsForTheFeed: Close of the last session using the feed
// returns once the driver's feed returned, so nothing of the Store runs
// after the caller closed everything. It runs in a synctest bubble: the
// feed's slow stop takes no real time, and a Close that did not wait
// would return before it, every time.
func TestCloseWaitsForTheFeed(t *testing.T) {
	synctest.Test(t, closeWaitsForTheFeed)
}

func closeWaitsForTheFeed(t *testing.T) {
	d := &slowStop{kvDriver: newKV()}
	s, err := record.New(d, record.Config{Name: "slow"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	a, err := s.Open(ctx, "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	a.Losses()
	if _, err := a.Acquire(ctx, "slow", 0); err != nil { // waits for the feed
		t.Fatal(err)
	}
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if !d.returned.Load() {
		t.Fatal("Close returned while the feed was still stopping")
	}
}

// TestSessionPastItsTTLIsLost: a session whose store keeps its record
// past the TTL (as Consul may) is lost all the same once a TTL has passed
// since the start of its last renewal: KeepAlive and Acquire say so, and
// a lock it held is not granted again under its old token. It runs in a
// synctest bubble: the TTL passes on the bubble's clock.
func TestSessionPastItsTTLIsLost(t *testing.T) {
	synctest.Test(t, sessionPastItsTTLIsLost)
}

func sessionPastItsTTLIsLost(t *testing.T) {
	d := newKV()
	d.lax = time.Hour
	s, err := record.New(d, record.Config{Name: "kv"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	const ttl = 200 * time.Millisecond
	a, err := s.Open(ctx, "a", ttl)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	if _, err := a.Acquire(ctx, "x", 0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(ttl + 50*time.Millisecond)
	if err := a.KeepAlive(ctx); !errors.Is(err, backends.ErrSessionLost) {
		t.Fatalf("KeepAlive a TTL after the last renewal = %v, want ErrSessionLost (the store still had the record)", err)
	}
	if tok, err := a.Acquire(ctx, "x", 0); !errors.Is(err, backends.ErrSessionLost) {
		t.Fatalf("Acquire a TTL after the last renewal = %d, %v; want ErrSessionLost", tok, err)
	}
}
