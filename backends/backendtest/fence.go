package backendtest

import (
	"errors"
	"fmt"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
)

// fenceChecks run on every backend: each has a native fence.
var fenceChecks = []check{
	{name: "FenceRefusesEndedTerms", run: fenceRefusesEndedTerms},
	{name: "FenceAdmitsConcurrentWrites", run: fenceAdmitsConcurrentWrites},
}

// fenced makes a write under the native fence for name and token, and
// fails the check unless it was admitted (ok) or refused with ErrNotHeld.
func (e *env) fenced(what, name string, token events.Token, ok bool) {
	e.t.Helper()
	err := e.h.Fence(e.ctx, e.b, name, token)
	switch {
	case ok && err != nil:
		e.t.Fatalf("%s: fenced write under token %d: %v, want it made", what, token, err)
	case !ok && err == nil:
		e.t.Fatalf("%s: fenced write under token %d was made; want it refused (ErrNotHeld)", what, token)
	case !ok && !errors.Is(err, backends.ErrNotHeld):
		e.t.Fatalf("%s: fenced write under token %d: %v, want ErrNotHeld", what, token, err)
	}
}

// fenceRefusesEndedTerms: the native fence admits the holder's writes and
// refuses those of every term that ended: a leader paused past its
// session's expiry while another was elected, a term released and its
// lock taken again (deleted and recreated), a term released with a hold
// (the lock held by nobody alive), a lock deleted behind its holder's
// back; and token 0, which no term has.
func fenceRefusesEndedTerms(e *env) {
	name := e.name()
	a := e.open("a")
	t1 := e.acquire(a, name, 0)
	e.fenced("holder", name, t1, true)
	e.fenced("token 0", name, 0, false)

	// a is paused: no keep-alive reaches the backend, its session
	// expires, b is elected; a wakes and writes under its old token.
	e.wait(e.h.TTL + e.h.TTL/10)
	b := e.open("b")
	t2 := e.grab(b, name)
	e.fenced("paused leader after another's election", name, t1, false)
	e.fenced("new leader", name, t2, true)

	// b releases: its term is over, and the lock is taken again.
	e.release(b, name, t2, 0)
	e.fenced("released term", name, t2, false)
	c := e.open("c")
	t3 := e.acquire(c, name, 0)
	for _, old := range []events.Token{t1, t2} {
		e.fenced(fmt.Sprintf("term %d after the lock was taken again", old), name, old, false)
	}
	e.fenced("holder of the lock taken again", name, t3, true)

	// c releases with a hold: the lock stays held, by nobody alive.
	e.release(c, name, t3, e.h.TTL/2)
	e.fenced("term released with a hold", name, t3, false)
	e.wait(e.h.TTL / 2)
	d := e.open("d")
	t4 := e.grab(d, name)
	e.fenced("holder after the hold", name, t4, true)

	// An operator deletes the lock behind d's back; f takes it.
	e.h.Delete(e.t, e.b, name)
	e.fenced("term whose lock was deleted", name, t4, false)
	f := e.open("f")
	t5 := e.grab(f, name)
	e.fenced("term whose lock was deleted, once taken again", name, t4, false)
	e.fenced("holder after the delete", name, t5, true)
	if !(t1 < t2 && t2 < t3 && t3 < t4 && t4 < t5) {
		e.t.Fatalf("tokens %d, %d, %d, %d, %d do not increase", t1, t2, t3, t4, t5)
	}
}

// fenceAdmitsConcurrentWrites: eight writes under the current term at
// once all succeed.
func fenceAdmitsConcurrentWrites(e *env) {
	name := e.name()
	a := e.open("a")
	tok := e.acquire(a, name, 0)
	errs := make(chan error, 8)
	for range 8 {
		go func() { errs <- e.h.Fence(e.ctx, e.b, name, tok) }()
	}
	for range 8 {
		if err := <-errs; err != nil {
			e.t.Fatalf("one of 8 concurrent fenced writes under token %d: %v", tok, err)
		}
	}
}
