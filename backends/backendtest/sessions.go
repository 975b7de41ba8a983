package backendtest

import (
	"errors"
	"fmt"
	"time"

	"github.com/hustings/hustings/backends"
)

// keepAliveKeepsLocks: renewing every TTL/3 keeps the session's locks
// held for twice the TTL and more.
func keepAliveKeepsLocks(e *env) {
	a := e.open("a")
	name := e.name()
	tok := e.acquire(a, name, 0)
	for range 7 {
		e.wait(e.h.TTL / 3)
		e.keepAlive(a)
		e.wantHolder(name, "a", tok)
	}
	b := e.open("b")
	_, err := b.Acquire(e.ctx, name, 0)
	e.wantErr("Acquire of a lock kept alive past its TTL", err, backends.ErrHeld)
}

// deletedLockIsLost: a lock deleted behind its holder's back is reported
// by the holder's Lost after its next KeepAlive, which still succeeds;
// the session's other locks are not. It stays lost while another holds it,
// and leaves Lost once the session acquires it again.
func deletedLockIsLost(e *env) {
	a := e.open("a")
	gone, kept := e.name(), e.name()
	tok := e.acquire(a, gone, 0)
	keptTok := e.acquire(a, kept, 0)
	e.keepAlive(a)
	if lost := a.Lost(); lost != nil {
		e.t.Fatalf("Lost() = %v with every lock in place, want nil", lost)
	}
	e.h.Delete(e.t, e.b, gone)
	e.eventually("a's KeepAlive reports the deleted lock", func() bool {
		e.keepAlive(a)
		return a.Lost()[gone] == tok
	})
	if lost := a.Lost(); len(lost) != 1 {
		e.t.Fatalf("Lost() = %v, want only %s:%d", lost, gone, tok)
	}
	e.wantHolder(kept, "a", keptTok)
	b := e.open("b")
	next := e.acquire(b, gone, 0)
	if next <= tok {
		e.t.Fatalf("token after the delete = %d, want > %d", next, tok)
	}
	e.keepAlive(a)
	if a.Lost()[gone] != tok {
		e.t.Fatalf("Lost() = %v once another session holds the lock, want %s:%d", a.Lost(), gone, tok)
	}
	_, err := a.Acquire(e.ctx, gone, 0)
	e.wantErr("Acquire of the lost lock, held by another", err, backends.ErrHeld)
	e.release(b, gone, next, 0)
	again := e.acquire(a, gone, 0)
	if again <= next {
		e.t.Fatalf("token when a takes it back = %d, want > %d", again, next)
	}
	e.keepAlive(a)
	if lost := a.Lost(); lost != nil {
		e.t.Fatalf("Lost() = %v after a acquired the lock again, want nil", lost)
	}
}

// takenOverLockIsPushed: where the session pushes losses (Losses is not
// nil), a lock it held across a renewal, then deleted behind its back and
// taken by another session, goes to Lost, and the channel signals, with
// no KeepAlive after the delete; a lock it releases itself does neither. (A backend may push the bare delete already, as
// etcd's watch does; Redis sees only the take. Other backends have
// nothing to check here: KeepAlive finds the loss, as DeletedLockIsLost
// checks.)
func takenOverLockIsPushed(e *env) {
	a := e.open("a")
	losses := a.Losses()
	if losses == nil {
		e.t.Logf("%T pushes no losses: KeepAlive alone finds them", a)
		return
	}
	released, gone := e.name(), e.name()
	e.release(a, released, e.acquire(a, released, 0), 0)
	tok := e.acquire(a, gone, 0)
	e.keepAlive(a)
	e.h.Delete(e.t, e.b, gone)
	e.acquire(e.open("b"), gone, 0)
	select {
	case <-losses:
	case <-time.After(wakeBound):
		e.t.Fatalf("no signal on Losses within %v of the delete and take-over", wakeBound)
	}
	if lost := a.Lost(); len(lost) != 1 || lost[gone] != tok {
		e.t.Fatalf("Lost() = %v after the delete and take-over, with no KeepAlive; want only %s:%d", lost, gone, tok)
	}
}

// releasedLockIsNotLost: a lock the session released, or released with a
// hold, is not reported lost, and neither is one it holds.
func releasedLockIsNotLost(e *env) {
	a := e.open("a")
	freed, held, kept := e.name(), e.name(), e.name()
	e.release(a, freed, e.acquire(a, freed, 0), 0)
	e.release(a, held, e.acquire(a, held, 0), e.h.TTL)
	e.acquire(a, kept, 0)
	e.keepAlive(a)
	if lost := a.Lost(); lost != nil {
		e.t.Fatalf("Lost() = %v after releases, want nil", lost)
	}
}

// expiryFreesLock: a session that stops renewing loses its lock after the
// TTL; another session takes it with a higher token, and the lost
// session's KeepAlive is ErrSessionLost.
func expiryFreesLock(e *env) {
	a := e.open("a")
	name := e.name()
	tok := e.acquire(a, name, 0)
	e.wait(e.h.TTL + e.h.TTL/10)
	b := e.open("b")
	next := e.grab(b, name)
	if next <= tok {
		e.t.Fatalf("token after expiry = %d, want > %d", next, tok)
	}
	e.wantHolder(name, "b", next)
	e.wantErr("KeepAlive of an expired session", a.KeepAlive(e.ctx), backends.ErrSessionLost)
	if err := a.Close(e.ctx); err != nil && !errors.Is(err, backends.ErrSessionLost) {
		e.t.Fatalf("Close of an expired session: %v, want nil or ErrSessionLost", err)
	}
	e.wantHolder(name, "b", next)
}

// expiryLosesAllLocks: losing a session loses every lock of it.
func expiryLosesAllLocks(e *env) {
	a := e.open("a")
	names := []string{e.name(), e.name(), e.name()}
	for _, name := range names {
		e.acquire(a, name, 0)
	}
	e.wait(e.h.TTL + e.h.TTL/10)
	for _, name := range names {
		e.eventuallyFree(name)
	}
	b := e.open("b")
	for _, name := range names {
		e.acquire(b, name, 0)
	}
}

// closeFreesLocks: Close frees every lock of the session; later calls are
// ErrSessionClosed, and a second Close is nil.
func closeFreesLocks(e *env) {
	a := e.open("a")
	first, second := e.name(), e.name()
	tok := e.acquire(a, first, 0)
	e.acquire(a, second, 0)
	if err := a.Close(e.ctx); err != nil {
		e.t.Fatalf("Close: %v", err)
	}
	e.eventuallyFree(first)
	e.eventuallyFree(second)
	if next := e.acquire(e.open("b"), first, 0); next <= tok {
		e.t.Fatalf("token after Close = %d, want > %d", next, tok)
	}
	_, err := a.Acquire(e.ctx, e.name(), 0)
	e.wantErr("Acquire after Close", err, backends.ErrSessionClosed)
	e.wantErr("KeepAlive after Close", a.KeepAlive(e.ctx), backends.ErrSessionClosed)
	e.wantErr("Release after Close", a.Release(e.ctx, first, tok, 0), backends.ErrSessionClosed)
	if err := a.Close(e.ctx); err != nil {
		e.t.Fatalf("second Close: %v, want nil", err)
	}
}

// leaseEnds: a lock acquired with a lease is lost after the lease even
// though its session is kept alive, which may take it again.
func leaseEnds(e *env) {
	a := e.open("a")
	name := e.name()
	lease := e.h.TTL / 2
	tok := e.acquire(a, name, lease)
	e.wantHolder(name, "a", tok)
	e.wait(lease / 2)
	e.keepAlive(a)
	if e.h.Advance != nil { // only a fake clock makes this deterministic
		e.wantHolder(name, "a", tok)
	}
	e.wait(lease/2 + lease/10)
	e.eventually("lock free after its lease", func() bool {
		e.keepAlive(a)
		return e.holder(name).ID == ""
	})
	if next := e.acquire(a, name, 0); next <= tok {
		e.t.Fatalf("token after the lease = %d, want > %d", next, tok)
	}
}

// releaseWithHold: a lock released with a hold stays held, by the
// releasing candidate's name and token, even past its session's Close,
// until the hold ends; then it is free.
func releaseWithHold(e *env) {
	a, b := e.open("a"), e.open("b")
	name := e.name()
	hold := e.h.TTL
	tok := e.acquire(a, name, 0)
	e.release(a, name, tok, hold)
	e.wantHolder(name, "a", tok)
	_, err := b.Acquire(e.ctx, name, 0)
	e.wantErr("Acquire by another session during the hold", err, backends.ErrHeld)
	_, err = a.Acquire(e.ctx, name, 0)
	e.wantErr("Acquire by the releasing session during the hold", err, backends.ErrHeld)
	e.wantErr("Release during the hold", a.Release(e.ctx, name, tok, 0), backends.ErrNotHeld)
	if err := a.Close(e.ctx); err != nil {
		e.t.Fatalf("Close: %v", err)
	}
	e.wantHolder(name, "a", tok)
	if e.h.Advance != nil { // only a fake clock makes this deterministic
		e.wait(hold / 2)
		e.wantHolder(name, "a", tok)
	}
	e.wait(hold)
	c := e.open("c")
	if next := e.grab(c, name); next <= tok {
		e.t.Fatalf("token after the hold = %d, want > %d", next, tok)
	}
}

// dequeuer returns s as a Dequeuer; the suite runs the checks that call
// it only where sessions have the power.
func (e *env) dequeuer(s backends.Session) backends.Dequeuer {
	e.t.Helper()
	d, ok := s.(backends.Dequeuer)
	if !ok {
		e.t.Fatalf("%T is not a backends.Dequeuer", s)
	}
	return d
}

// dequeue takes s out of name's line, failing the check on any error.
func (e *env) dequeue(s backends.Session, name string) {
	e.t.Helper()
	if err := e.dequeuer(s).Dequeue(e.ctx, name); err != nil {
		e.t.Fatalf("%s: Dequeue(%q): %v", s.ID(), name, err)
	}
}

// queue has s find name held, which puts it in name's line; where
// sessions join a line only when they wait (backends.LineWatcher), it
// then watches name in line and tries again, as a waiter does.
func (e *env) queue(s backends.Session, name string) {
	e.t.Helper()
	_, err := s.Acquire(e.ctx, name, 0)
	e.wantErr(fmt.Sprintf("%s: Acquire(%q) of a held lock", s.ID(), name), err, backends.ErrHeld)
	lw, ok := s.(backends.LineWatcher)
	if !ok {
		return
	}
	if _, err := lw.WatchInLine(e.ctx, name); err != nil {
		e.t.Fatalf("%s: WatchInLine(%q): %v", s.ID(), name, err)
	}
	_, err = s.Acquire(e.ctx, name, 0)
	e.wantErr(fmt.Sprintf("%s: Acquire(%q) of a held lock, watching it in line", s.ID(), name), err, backends.ErrHeld)
}

// tryingJoinsNoLine: where sessions are backends.LineWatchers, a session
// that finds a lock held without watching it in line (a run that skips
// on contention), even while another watches it, is not made its holder
// by the release.
func tryingJoinsNoLine(e *env) {
	h, s := e.open("h"), e.open("s")
	name := e.name()
	tok := e.acquire(h, name, 0)
	for range 2 {
		_, err := s.Acquire(e.ctx, name, 0)
		e.wantErr(fmt.Sprintf("%s: Acquire(%q) of a held lock", s.ID(), name), err, backends.ErrHeld)
		if _, err := e.b.Watch(e.ctx, name); err != nil {
			e.t.Fatalf("Watch(%q): %v", name, err)
		}
	}
	e.release(h, name, tok, 0)
	e.wantFree(name, "the release of a lock that was only tried")
}

// lineWatcherIsNamed: where sessions are backends.LineWatchers, the
// release of a lock names the session waiting in its line the holder,
// under a token above the releaser's; its Acquire returns that token.
func lineWatcherIsNamed(e *env) {
	h, s := e.open("h"), e.open("s")
	name := e.name()
	tok := e.acquire(h, name, 0)
	e.queue(s, name)
	e.release(h, name, tok, 0)
	got := e.holder(name)
	if got.ID != "s" || got.Token <= tok {
		e.t.Fatalf("Holder(%q) = %+v after the holder's release; want s, in line, under a token above %d", name, got, tok)
	}
	if mine := e.acquire(s, name, 0); mine != got.Token {
		e.t.Fatalf("s's Acquire = token %d, want %d, the one Holder reports", mine, got.Token)
	}
}

// dequeueLeavesLine: where sessions are backends.Dequeuers, a session
// that left a lock's line is not made its holder by the release; leaving a
// line twice is no error.
func dequeueLeavesLine(e *env) {
	h, s := e.open("h"), e.open("s")
	e.dequeuer(s)
	name := e.name()
	tok := e.acquire(h, name, 0)
	e.queue(s, name)
	e.dequeue(s, name)
	e.dequeue(s, name) // no longer in line: nothing to do
	e.release(h, name, tok, 0)
	e.wantFree(name, "the release of a lock whose line was left")
}

// dequeueReleasesUntoldHold: where sessions are backends.Dequeuers, a
// lock the line made a session's without an Acquire telling it is
// released by Dequeue, and a lock the session was told it holds is left
// alone.
func dequeueReleasesUntoldHold(e *env) {
	h, s := e.open("h"), e.open("s")
	e.dequeuer(s)
	untold, told := e.name(), e.name()
	tok := e.acquire(h, untold, 0)
	e.queue(s, untold)
	e.release(h, untold, tok, 0)
	if got := e.holder(untold); got.ID != "s" {
		e.t.Fatalf("Holder(%q) = %+v after the holder's release; want the queued session s (a backend that queues waiters makes the next one the holder)", untold, got)
	}
	e.dequeue(s, untold)
	e.wantFree(untold, "Dequeue of a lock the line made the session's")
	mine := e.acquire(s, told, 0)
	e.dequeue(s, told)
	e.wantHolder(told, "s", mine)
}

// wantFree fails the check unless name is free now, after what.
func (e *env) wantFree(name, after string) {
	e.t.Helper()
	if got := e.holder(name); got.ID != "" {
		e.t.Fatalf("Holder(%q) = %+v after %s, want it free", name, got, after)
	}
}
