package crleader

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
)

// Errors of this package; match them with errors.Is. Bad input returns an
// error matching campaign.ErrInvalid, and calls after Close one matching
// campaign.ErrClosed.
var (
	// ErrNotLeader: the lock's campaign holds no term, or one that ends
	// too soon for client-go to be told it may lead on (see Lock.Update).
	ErrNotLeader = errors.New("crleader: not elected")
	// ErrTermEnded: the term client-go was told it holds has ended, or
	// client-go released it. The lock elects no more: the manager exits.
	ErrTermEnded = errors.New("crleader: term ended")
)

var _ resourcelock.Interface = (*Lock)(nil)

// Lock is a resourcelock.Interface that elects a controller-runtime
// manager's leader on a Hustings campaign, on any backend. Make it with
// NewLock and hand it to manager.New through Options; Close it after the
// manager's Start returned. Its methods are safe for concurrent use.
type Lock struct {
	c     *campaign.Campaign
	id    string
	name  string
	ttl   time.Duration
	guard time.Duration // how long client-go may go on leading after a renewal it was granted, and some slack

	// base is the manager's runnables' base context (see Options),
	// cancelled when a term client-go was granted ends.
	base       context.Context
	cancelBase context.CancelCauseFunc

	mu        sync.Mutex
	cancel    context.CancelFunc // ends the campaign's Run; nil until the first Get
	ran       chan struct{}      // closed when the campaign's Run returned
	term      *term              // the term in force, nil if none
	granted   events.Token       // the term client-go was told it holds; 0 if none yet (see over)
	lastGrant time.Time          // when it was last told so
	released  bool               // client-go released the lock
	closed    bool
	failed    error         // why the campaign ended by itself, if it did
	changed   chan struct{} // closed and replaced whenever stopped or term may have changed
}

// term is a term of the lock's campaign: its context (cancelled when it
// ends) and its Elected event.
type term struct {
	ctx     context.Context
	elected events.Event
}

// NewLock returns a lock for the lock name on b, elected by a campaign
// whose session lives ttl after its last renewal (campaign.WithTTL; 15 s
// is controller-runtime's default LeaseDuration). opts are campaign.New's:
// WithID (the manager's identity), WithLogger, ops.WithMetrics, WithRetry,
// WithSafetyMargin, WithGrace (default here: ttl); a WithTTL among them is
// overridden by ttl. A safety margin over a quarter of the TTL (the
// default is a tenth) leaves too little of a term between renewals for
// Update to grant client-go its renewals. NewLock starts nothing: the
// manager's first Get does.
func NewLock(b backends.Backend, name string, ttl time.Duration, opts ...campaign.Option) (*Lock, error) {
	opts = append(append([]campaign.Option{campaign.WithGrace(ttl)}, opts...), campaign.WithTTL(ttl))
	c, err := campaign.New(b, name, opts...)
	if err != nil {
		return nil, err
	}
	_, _, guard := timers(ttl)
	st := c.State()
	base, cancelBase := context.WithCancelCause(context.Background())
	return &Lock{
		c:          c,
		id:         st.ID,
		name:       st.Name,
		ttl:        ttl,
		guard:      guard,
		base:       base,
		cancelBase: cancelBase,
		changed:    make(chan struct{}),
	}, nil
}

// timers returns client-go's RenewDeadline and RetryPeriod for a TTL, and
// the guard: how much of a term must be left for Update to grant a
// renewal. After its last granted renewal client-go goes on leading for
// at most RetryPeriod (jittered, to be safe) + RenewDeadline; the guard
// adds a tenth of the TTL for client-go's timers running late and the
// manager stopping its runnables. RenewDeadline can be short, since
// Update never waits for the backend: it only bounds how long client-go
// is refused before it gives up. With renewals every third of the TTL and
// the default margin of a tenth, a term has at least 0.57 TTL left, over
// the guard's 0.42.
func timers(ttl time.Duration) (renewDeadline, retryPeriod, guard time.Duration) {
	renewDeadline, retryPeriod = ttl/5, ttl/10
	guard = renewDeadline + time.Duration(leaderelection.JitterFactor*float64(retryPeriod)) + ttl/10
	return renewDeadline, retryPeriod, guard
}

// Options returns o made to elect the manager's leader on l: LeaderElection
// on, l as LeaderElectionResourceLockInterface, LeaderElectionReleaseOnCancel
// on (a graceful stop hands over at once), and client-go's timers derived
// from the TTL: LeaseDuration the TTL, RenewDeadline a fifth of it,
// RetryPeriod a tenth. Values o had there are replaced: l's safety rests
// on them. BaseContext, the parent of every runnable's context, is
// wrapped (or set) so that it is cancelled the moment a term the manager
// led under ends, before client-go reports the loss, with the cause
// ErrTermEnded (context.Cause tells it from the manager's stop). An empty
// LeaderElectionID (client-go's name for the election, in its logs and
// metrics) becomes the lock name; everything else in o is left as it is.
func (l *Lock) Options(o manager.Options) manager.Options {
	renew, retry, _ := timers(l.ttl)
	if o.LeaderElectionID == "" {
		o.LeaderElectionID = l.name
	}
	o.BaseContext = l.baseContext(o.BaseContext)
	o.LeaderElection = true
	o.LeaderElectionResourceLockInterface = l
	o.LeaderElectionReleaseOnCancel = true
	o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = &l.ttl, &renew, &retry
	return o
}

// baseContext returns a manager.BaseContextFunc whose contexts are
// parent's (context.Background if nil), cancelled also when l.base is,
// with its cause.
func (l *Lock) baseContext(parent manager.BaseContextFunc) manager.BaseContextFunc {
	if parent == nil {
		return func() context.Context { return l.base }
	}
	return func() context.Context {
		ctx, cancel := context.WithCancelCause(parent())
		context.AfterFunc(l.base, func() { cancel(context.Cause(l.base)) })
		return ctx
	}
}

// Identity returns the campaign's candidate ID (campaign.WithID).
func (l *Lock) Identity() string { return l.id }

// Describe returns the full lock name, for client-go's logs.
func (l *Lock) Describe() string { return "hustings/" + l.name }

// RecordEvent does nothing: the campaign reports its terms itself
// (campaign.WithLogger, ops.WithMetrics).
func (l *Lock) RecordEvent(string) {}

// Get returns the record of the term in force: HolderIdentity the lock's
// identity, AcquireTime and RenewTime the term's start, LeaderTransitions
// its fencing token. While client-go has not been granted a term, Get
// starts the campaign (on its first call) and blocks until the campaign is
// elected or ctx ends: a graceful handover reaches the next manager as soon
// as the backend wakes its campaign, not at client-go's next retry. Once
// the term client-go was granted has ended, Get returns ErrTermEnded at
// once; after Close, campaign.ErrClosed; and if the campaign ended by
// itself (the backend refused its session: no retry cures that), why.
func (l *Lock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	if err := l.start(); err != nil {
		return nil, nil, err
	}
	for {
		l.mu.Lock()
		t, err, changed := l.term, l.stopped(), l.changed
		l.mu.Unlock()
		switch {
		case err != nil:
			return nil, nil, err
		case t != nil:
			return l.record(t.elected)
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("crleader: waiting to be elected: %w", ctx.Err())
		}
	}
}

// Create is Update: the campaign, not the record, decides who leads.
func (l *Lock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	return l.Update(ctx, ler)
}

// Update tells client-go whether it may lead on. A record naming the lock's
// identity succeeds only while the campaign's term is in force and its
// local deadline is far enough away that client-go, which goes on leading
// for up to RenewDeadline + RetryPeriod after its last successful renewal,
// stops before that deadline; else it returns ErrNotLeader, or ErrTermEnded
// once the term client-go was granted has ended. An Update whose context
// shows a longer RenewDeadline than Options sets is refused with
// campaign.ErrInvalid. A record with no holder (client-go's release on
// cancel) ends the campaign, which releases the lock on the backend
// without Update waiting for it (Close does). Update makes no backend call.
func (l *Lock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	switch {
	case ler.HolderIdentity == "":
		return l.release()
	case ler.HolderIdentity != l.id:
		return fmt.Errorf("%w: record names %q, the lock's identity is %q", campaign.ErrInvalid, ler.HolderIdentity, l.id)
	}
	if dl, ok := ctx.Deadline(); ok {
		if renew, _, _ := timers(l.ttl); time.Until(dl) > renew {
			return fmt.Errorf("%w: client-go's RenewDeadline is longer than the lock's %v: make the manager's options with Lock.Options", campaign.ErrInvalid, renew)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.stopped(); err != nil {
		return err
	}
	t := l.term
	if t == nil || t.ctx.Err() != nil {
		return ErrNotLeader
	}
	st := l.c.State()
	if !st.Leader || st.Token != t.elected.Token {
		return ErrNotLeader
	}
	if left := time.Until(st.Deadline); left < l.guard {
		return fmt.Errorf("%w: term %d ends in %v, under the %v client-go may lead on after a renewal", ErrNotLeader, st.Token, left, l.guard)
	}
	l.granted, l.lastGrant = t.elected.Token, time.Now()
	return nil
}

// Close ends the campaign: a term in force ends at once (Revoked; the
// manager's runnables are cancelled if it led under it), and the lock is
// released on the backend once client-go released it or can no longer
// believe it leads. Close returns when the lock is released. Call it after
// the manager's Start returned. Calling it again is fine.
func (l *Lock) Close() error {
	l.mu.Lock()
	l.closed = true
	cancel, ran := l.cancel, l.ran
	l.notify()
	l.mu.Unlock()
	if cancel == nil {
		return l.c.Close()
	}
	cancel()
	<-ran
	return nil
}

// start starts the campaign on the first call.
func (l *Lock) start() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.stopped(); err != nil {
		return err
	}
	if l.cancel != nil {
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel, l.ran = cancel, make(chan struct{})
	go func() {
		defer close(l.ran)
		err := campaign.WhileLeader(ctx, l.c, l.hold)
		l.mu.Lock()
		defer l.mu.Unlock()
		if ctx.Err() == nil { // not stopped by the lock: the backend refused the session
			l.failed = fmt.Errorf("crleader: the campaign ended: %w", err)
			l.notify()
		}
	}()
	return nil
}

// hold is the campaign's work for one term. Client-go's leadership is the
// work bound to the term: when a term client-go was granted ends, hold
// cancels the manager's runnables (their base context) at once, and
// returns only once client-go released the lock or can no longer believe
// it leads (it is refused every renewal from then on), so that a graceful
// stop releases the lock after that, not before. Such a term ends the
// campaign: the manager exits on its loss, so this lock elects no more.
func (l *Lock) hold(ctx context.Context, elected events.Event) error {
	l.mu.Lock()
	l.term = &term{ctx: ctx, elected: elected}
	l.notify()
	l.mu.Unlock()

	<-ctx.Done()

	l.mu.Lock()
	l.term = nil
	granted := l.granted == elected.Token // then the lock is over
	wait := time.Until(l.lastGrant.Add(l.guard))
	released := l.released
	l.notify()
	cancel := l.cancel
	l.mu.Unlock()
	if !granted {
		return nil
	}
	l.cancelBase(ErrTermEnded)
	cancel()
	if !released && wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		<-t.C
	}
	return nil
}

// release ends the campaign after client-go released the lock. It does
// not wait for the backend: client-go reports the end of its leadership
// only once release returns, and a backend that does not answer must not
// hold the manager's leader runnables past the term. Close waits.
func (l *Lock) release() error {
	l.mu.Lock()
	l.released = true
	cancel := l.cancel
	l.notify()
	l.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	return nil
}

// stopped returns why the lock elects no more, or nil. l.mu is held.
func (l *Lock) stopped() error {
	switch {
	case l.closed:
		return fmt.Errorf("crleader: %w", campaign.ErrClosed)
	case l.over() || l.released:
		return ErrTermEnded
	case l.failed != nil:
		return l.failed
	}
	return nil
}

// over reports whether the term client-go was granted has ended, so that
// the lock elects no more: Update grants only the term in force, and hold
// ends the campaign when a granted term ends. l.mu is held.
func (l *Lock) over() bool { return l.granted != 0 && l.term == nil }

// notify wakes the Gets waiting for a change. l.mu is held.
func (l *Lock) notify() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// record returns the record client-go sees for a term, and its JSON: the
// same bytes for the whole term, so client-go's observed time moves only
// with its own renewals.
func (l *Lock) record(e events.Event) (*resourcelock.LeaderElectionRecord, []byte, error) {
	r := &resourcelock.LeaderElectionRecord{
		HolderIdentity:       l.id,
		LeaseDurationSeconds: int((l.ttl + time.Second - 1) / time.Second),
		AcquireTime:          metav1.NewTime(e.Time),
		RenewTime:            metav1.NewTime(e.Time),
		LeaderTransitions:    int(min(uint64(e.Token), math.MaxInt)),
	}
	raw, err := json.Marshal(r)
	if err != nil {
		return nil, nil, fmt.Errorf("crleader: %w", err)
	}
	return r, raw, nil
}
