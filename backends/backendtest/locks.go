package backendtest

import (
	"errors"
	"fmt"
	"sync"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
)

// acquireFree: a free lock is taken with a token > 0, and Holder reports
// the taker.
func acquireFree(e *env) {
	a := e.open("a")
	name := e.name()
	if h := e.holder(name); h.ID != "" || h.Token != 0 {
		e.t.Fatalf("Holder(%q) of a new name = %+v, want free", name, h)
	}
	tok := e.acquire(a, name, 0)
	e.wantHolder(name, "a", tok)
}

// acquireAgain: acquiring a lock the session holds is an idempotent retry.
func acquireAgain(e *env) {
	a := e.open("a")
	name := e.name()
	tok := e.acquire(a, name, 0)
	if again := e.acquire(a, name, 0); again != tok {
		e.t.Fatalf("second Acquire by the holder: token %d, want %d", again, tok)
	}
	e.wantHolder(name, "a", tok)
}

// contention: a lock held by one session is ErrHeld for another, and
// contention is not a failure of the backend.
func contention(e *env) {
	a, b := e.open("a"), e.open("b")
	name := e.name()
	tok := e.acquire(a, name, 0)
	_, err := b.Acquire(e.ctx, name, 0)
	e.wantErr("Acquire of a held lock", err, backends.ErrHeld)
	if errors.Is(err, backends.ErrUnavailable) {
		e.t.Fatalf("Acquire of a held lock: %v also matches ErrUnavailable", err)
	}
	e.wantHolder(name, "a", tok)
}

// sameIDOtherSession: the holder is the session, not the candidate ID.
func sameIDOtherSession(e *env) {
	first, second := e.open("a"), e.open("a")
	name := e.name()
	tok := e.acquire(first, name, 0)
	_, err := second.Acquire(e.ctx, name, 0)
	e.wantErr("Acquire by another session with the same ID", err, backends.ErrHeld)
	e.wantHolder(name, "a", tok)
}

// releaseFrees: after Release the lock is free and another session takes
// it with a higher token; a second Release is ErrNotHeld.
func releaseFrees(e *env) {
	a, b := e.open("a"), e.open("b")
	name := e.name()
	tok := e.acquire(a, name, 0)
	e.release(a, name, tok, 0)
	e.eventuallyFree(name)
	e.wantErr("second Release", a.Release(e.ctx, name, tok, 0), backends.ErrNotHeld)
	next := e.acquire(b, name, 0)
	if next <= tok {
		e.t.Fatalf("token after release = %d, want > %d", next, tok)
	}
	e.wantHolder(name, "b", next)
}

// releaseByNonHolder: a Release by another session, under a wrong token,
// or of a free lock is ErrNotHeld and changes nothing.
func releaseByNonHolder(e *env) {
	a, b := e.open("a"), e.open("b")
	name, free := e.name(), e.name()
	tok := e.acquire(a, name, 0)
	cases := []struct {
		what string
		err  error
	}{
		{"Release by another session", b.Release(e.ctx, name, tok, 0)},
		{"Release with a hold by another session", b.Release(e.ctx, name, tok, e.h.TTL)},
		{"Release under a wrong token", a.Release(e.ctx, name, tok+1, 0)},
		{"Release under token 0", a.Release(e.ctx, name, 0, 0)},
		{"Release of a free lock", a.Release(e.ctx, free, tok, 0)},
	}
	for _, c := range cases {
		if !errors.Is(c.err, backends.ErrNotHeld) {
			e.t.Errorf("%s: got %v, want ErrNotHeld", c.what, c.err)
		}
	}
	e.wantHolder(name, "a", tok)
	if h := e.holder(free); h.ID != "" {
		e.t.Fatalf("Holder(%q) = %+v after a failed Release, want free", free, h)
	}
	if again := e.acquire(a, name, 0); again != tok {
		e.t.Fatalf("Acquire by the holder after failed Releases: token %d, want %d", again, tok)
	}
}

// tokensIncrease: tokens strictly increase across holders and across
// release and re-acquire by the same session.
func tokensIncrease(e *env) {
	a, b := e.open("a"), e.open("b")
	name := e.name()
	var last events.Token
	for round := range 4 {
		for _, s := range []backends.Session{a, a, b} {
			tok := e.acquire(s, name, 0)
			if tok <= last {
				e.t.Fatalf("round %d: %s got token %d after %d", round, s.ID(), tok, last)
			}
			e.wantHolder(name, s.ID(), tok)
			e.release(s, name, tok, 0)
			last = tok
		}
	}
}

// renewAll renews every session at once, failing the check on an error.
func (e *env) renewAll(sessions []backends.Session) {
	e.t.Helper()
	errs := make([]error, len(sessions))
	var wg sync.WaitGroup
	for i, s := range sessions {
		wg.Go(func() { errs[i] = s.KeepAlive(e.ctx) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			e.t.Fatalf("%s: KeepAlive: %v", sessions[i].ID(), err)
		}
	}
}

// raceResult is what one racer of raceForFreeLock got.
type raceResult struct {
	s   backends.Session
	tok events.Token
	err error
}

// raceForFreeLock: of K sessions that try to take a free lock at once,
// exactly one wins and the others get ErrHeld, round after round. The
// racers renew before each round, so that the rounds need not end within
// one TTL of the Opens (on a busy machine they did not: the winner's
// session had expired when its lock was read).
func raceForFreeLock(e *env) {
	const k, rounds = 8, 3
	racers := make([]backends.Session, k)
	for i := range racers {
		racers[i] = e.open(fmt.Sprintf("racer-%d", i))
	}
	name := e.name()
	var last events.Token
	for round := range rounds {
		e.renewAll(racers)
		winner := e.race(racers, name)
		if winner.tok <= last {
			e.t.Fatalf("round %d: winner's token %d, want > %d", round, winner.tok, last)
		}
		e.wantHolder(name, winner.s.ID(), winner.tok)
		e.release(winner.s, name, winner.tok, 0)
		last = winner.tok
	}
}

// race starts every racer at once on name and returns the one winner.
func (e *env) race(racers []backends.Session, name string) raceResult {
	e.t.Helper()
	start := make(chan struct{})
	results := make(chan raceResult, len(racers))
	var wg sync.WaitGroup
	for _, s := range racers {
		wg.Go(func() {
			<-start
			tok, err := s.Acquire(e.ctx, name, 0)
			results <- raceResult{s, tok, err}
		})
	}
	close(start)
	wg.Wait()
	close(results)
	var winners []raceResult
	for r := range results {
		switch {
		case r.err == nil:
			winners = append(winners, r)
		case !errors.Is(r.err, backends.ErrHeld):
			e.t.Errorf("%s: Acquire(%q): %v, want nil or ErrHeld", r.s.ID(), name, r.err)
		}
	}
	if len(winners) != 1 {
		e.t.Fatalf("%d of %d racers took %q, want exactly 1: %+v", len(winners), len(racers), name, winners)
	}
	return winners[0]
}
