// Package backendtest checks that a backend keeps the contract of package
// backends, the way testing/fstest.TestFS checks a file system. Every
// backend's tests call Run with a Harness.
//
// The checks run one after another, each as its own subtest with its own
// backend from Harness.New and its own lock names. They wait with
// Harness.Advance when it is set, and with real sleeps and generous
// polling otherwise: they check that things happen and that nothing wrong
// happens, never that anything is fast.
package backendtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
)

// Harness tells Run how to test one backend.
type Harness struct {
	// New returns a fresh backend for one subtest; it may share a server
	// with other subtests (lock names never repeat). It registers its own
	// cleanup with t.Cleanup. Required.
	New func(t *testing.T) backends.Backend
	// TTL is the session TTL the suite opens sessions with: for example 1s
	// with a fake clock, a few seconds for real servers. Required, > 0.
	TTL time.Duration
	// Advance lets time pass by d on the backend's clock, for a fake
	// clock. Nil means real time: the suite sleeps instead.
	Advance func(d time.Duration)
	// BadNames are valid lock names (non-empty, at most 256 bytes of
	// UTF-8, no control characters) that this backend cannot store; each
	// must be rejected with ErrInvalid.
	BadNames []string
	// Delete removes the lock name from the backend behind its holder's
	// back, as an operator's delete or an eviction would (a DEL of the key,
	// a delete of the key or node). Required.
	Delete func(t *testing.T, b backends.Backend, name string)
	// Fence makes one write in the backend's own store under the
	// backend's native fence for name and token (etcd's Backend.Fence in
	// the write's Txn, Redis's Fence, ...) and returns nil if the
	// write was made, an error matching backends.ErrNotHeld if the fence
	// refused it (no write made), or another error. It must be safe for
	// concurrent use. Required.
	Fence func(ctx context.Context, b backends.Backend, name string, token events.Token) error
}

// wakeBound is how long the suite waits for a watch signal or for a call
// with a done context to return. It is generous, not a latency target.
const wakeBound = 10 * time.Second

// check is one subtest of the suite.
type check struct {
	name  string
	run   func(e *env)
	power power // the optional power it checks; the suite runs it only where the backend has it
}

// power is an optional power of a backend or its sessions.
type power int

const (
	always         power = iota
	releaseWatcher       // the Backend is a backends.ReleaseWatcher
	dequeuer             // its Sessions are backends.Dequeuers
	lineWatcher          // its Sessions are backends.LineWatchers
	lister               // the Backend's store can list (Backend.List)
)

// checks is the whole suite, in the order it runs.
var checks = []check{
	{name: "AcquireFree", run: acquireFree},
	{name: "AcquireAgainSameToken", run: acquireAgain},
	{name: "ContentionIsErrHeld", run: contention},
	{name: "SameIDOtherSessionIsErrHeld", run: sameIDOtherSession},
	{name: "ReleaseFrees", run: releaseFrees},
	{name: "ReleaseByNonHolder", run: releaseByNonHolder},
	{name: "TokensIncrease", run: tokensIncrease},
	{name: "RaceForFreeLock", run: raceForFreeLock},
	{name: "KeepAliveKeepsLocks", run: keepAliveKeepsLocks},
	{name: "DeletedLockIsLost", run: deletedLockIsLost},
	{name: "TakenOverLockIsPushed", run: takenOverLockIsPushed},
	{name: "ReleasedLockIsNotLost", run: releasedLockIsNotLost},
	{name: "ExpiryFreesLock", run: expiryFreesLock},
	{name: "ExpiryLosesAllLocks", run: expiryLosesAllLocks},
	{name: "CloseFreesLocks", run: closeFreesLocks},
	{name: "LeaseEnds", run: leaseEnds},
	{name: "ReleaseWithHold", run: releaseWithHold},
	{name: "ReleaseWakesWaiter", run: releaseWakesWaiter},
	{name: "CloseWakesWaiter", run: closeWakesWaiter},
	{name: "WatchClosedWithContext", run: watchClosedWithContext},
	{name: "ReleaseWakesReleaseWatcher", run: releaseWakesReleaseWatcher, power: releaseWatcher},
	{name: "CloseWakesReleaseWatcher", run: closeWakesReleaseWatcher, power: releaseWatcher},
	{name: "ReleaseWatchClosedWithContext", run: releaseWatchClosedWithContext, power: releaseWatcher},
	{name: "DequeueLeavesLine", run: dequeueLeavesLine, power: dequeuer},
	{name: "DequeueReleasesUntoldHold", run: dequeueReleasesUntoldHold, power: dequeuer},
	{name: "TryingJoinsNoLine", run: tryingJoinsNoLine, power: lineWatcher},
	{name: "LineWatcherIsNamed", run: lineWatcherIsNamed, power: lineWatcher},
	{name: "HolderDescribesTerm", run: holderDescribesTerm},
	{name: "HolderOfHoldHasNoSession", run: holderOfHold},
	{name: "ListFindsHeldLocks", run: listFindsHeldLocks, power: lister},
	{name: "InvalidInput", run: invalidInput},
	{name: "CanceledContext", run: canceledContext},
}

// Run runs the contract suite against the backends h.New returns.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.New == nil || h.TTL <= 0 || h.Delete == nil || h.Fence == nil {
		t.Fatalf("backendtest: Harness needs New, Delete, Fence and a TTL > 0 (TTL is %v)", h.TTL)
	}
	run := fmt.Sprintf("%x", time.Now().UnixNano())
	all := slices.Concat(checks, registryChecks, fenceChecks)
	has := powers(t, h)
	for _, c := range all {
		if !has[c.power] {
			continue // not a power of this backend: nothing to check, and not a skipped test
		}
		t.Run(c.name, func(t *testing.T) {
			c.run(&env{t: t, h: h, b: h.New(t), ctx: t.Context(), run: run})
		})
	}
}

// env is what one check works with. Its methods call t.Fatal, so they are
// only called from the test goroutine.
type env struct {
	t     *testing.T
	h     Harness
	b     backends.Backend
	ctx   context.Context
	run   string // tells this Run's names from earlier runs on a shared server
	names int
}

// name returns a lock name used by no other check, run or call.
func (e *env) name() string {
	e.names++
	test := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '.'
	}, e.t.Name())
	if len(test) > 100 {
		test = test[len(test)-100:]
	}
	return fmt.Sprintf("backendtest-%s-%s-%d", e.run, test, e.names)
}

// open opens a session for id with the suite's TTL; it is closed when the
// check ends.
func (e *env) open(id string) backends.Session {
	e.t.Helper()
	s, err := e.b.Open(e.ctx, id, e.h.TTL)
	if err != nil {
		e.t.Fatalf("Open(%q, %v): %v", id, e.h.TTL, err)
	}
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wakeBound)
		defer cancel()
		_ = s.Close(ctx) // the check may have closed it, or let it expire
	})
	return s
}

// acquire takes name through s, failing the check on any error.
func (e *env) acquire(s backends.Session, name string, lease time.Duration) events.Token {
	e.t.Helper()
	tok, err := s.Acquire(e.ctx, name, lease)
	if err != nil {
		e.t.Fatalf("%s: Acquire(%q, %v): %v", s.ID(), name, lease, err)
	}
	if tok == 0 {
		e.t.Fatalf("%s: Acquire(%q): token 0; tokens start at 1", s.ID(), name)
	}
	return tok
}

// release gives name up through s, failing the check on any error.
func (e *env) release(s backends.Session, name string, tok events.Token, hold time.Duration) {
	e.t.Helper()
	if err := s.Release(e.ctx, name, tok, hold); err != nil {
		e.t.Fatalf("%s: Release(%q, %d, %v): %v", s.ID(), name, tok, hold, err)
	}
}

// keepAlive renews s, failing the check on any error.
func (e *env) keepAlive(s backends.Session) {
	e.t.Helper()
	if err := s.KeepAlive(e.ctx); err != nil {
		e.t.Fatalf("%s: KeepAlive: %v", s.ID(), err)
	}
}

// holder reports who holds name, failing the check on any error.
func (e *env) holder(name string) backends.Holder {
	e.t.Helper()
	h, err := e.b.Holder(e.ctx, name)
	if err != nil {
		e.t.Fatalf("Holder(%q): %v", name, err)
	}
	return h
}

// wantHolder fails the check unless name is held by id under tok.
func (e *env) wantHolder(name, id string, tok events.Token) {
	e.t.Helper()
	if got := e.holder(name); got.ID != id || got.Token != tok {
		e.t.Fatalf("Holder(%q) = %+v, want ID %q, Token %d", name, got, id, tok)
	}
}

// wantErr fails the check unless err matches target.
func (e *env) wantErr(what string, err, target error) {
	e.t.Helper()
	if !errors.Is(err, target) {
		e.t.Fatalf("%s: got error %v, want one matching %q", what, err, target)
	}
}

// wait lets d pass on the backend's clock.
func (e *env) wait(d time.Duration) {
	if e.h.Advance != nil {
		e.h.Advance(d)
		return
	}
	time.Sleep(d)
}

// eventually polls cond until it returns true, for up to the TTL plus ten
// seconds of real time.
func (e *env) eventually(what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(e.h.TTL + 10*time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("%s: still not so after %v", what, e.h.TTL+10*time.Second)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// eventuallyFree waits until name is free.
func (e *env) eventuallyFree(name string) {
	e.t.Helper()
	e.eventually(fmt.Sprintf("lock %q free", name), func() bool { return e.holder(name).ID == "" })
}

// grab waits until s takes name, renewing s meanwhile, and returns the
// token; anything but contention fails the check.
func (e *env) grab(s backends.Session, name string) events.Token {
	e.t.Helper()
	var tok events.Token
	e.eventually(fmt.Sprintf("%s takes %q", s.ID(), name), func() bool {
		e.keepAlive(s)
		t, err := s.Acquire(e.ctx, name, 0)
		if err != nil && !errors.Is(err, backends.ErrHeld) {
			e.t.Fatalf("%s: Acquire(%q): %v", s.ID(), name, err)
		}
		tok = t
		return err == nil
	})
	return tok
}

// powers reports which optional powers the backends h.New returns have,
// from one backend and one session of it.
func powers(t *testing.T, h Harness) map[power]bool {
	t.Helper()
	b := h.New(t)
	s, err := b.Open(t.Context(), "powers", h.TTL)
	if err != nil {
		t.Fatalf("backendtest: Open to look at the session's powers: %v", err)
	}
	defer s.Close(context.Background())
	_, rw := b.(backends.ReleaseWatcher)
	_, dq := s.(backends.Dequeuer)
	_, lw := s.(backends.LineWatcher)
	return map[power]bool{always: true, releaseWatcher: rw, dequeuer: dq, lineWatcher: lw, lister: canList(t, b)}
}
