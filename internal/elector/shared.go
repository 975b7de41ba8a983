package elector

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
)

func sessionLost(why string) error { return fmt.Errorf("%w: %s", events.ErrSessionLost, why) }

// never is a time that does not come: in shared mode the actor opens and
// renews nothing itself.
var never = time.Unix(1<<62, 0)

// adopt takes in the shared candidate's state: a renewal extends the term;
// a new generation means the old session is gone, with every lock of it,
// and the campaign starts over on the new one.
func (a *actor) adopt() {
	cur, changed := a.shared.state()
	a.sharedChanged = changed
	a.keepAt, a.openAt = never, never
	if cur.closing {
		a.candidateGone = true
	}
	if cur.gen != a.gen || (a.sess == nil && cur.sess != nil) {
		if a.term != nil && cur.gen != a.gen {
			a.revoke(sessionLost("the shared session was replaced"))
		}
		if cur.gen != a.gen {
			a.dropReleases() // the old session's locks went with it
		}
		a.sess, a.gen, a.renewed, a.inLines = cur.sess, cur.gen, cur.renewed, false
		a.tryAt = time.Now()
		if a.gate != nil {
			a.gate.registered, a.gate.fresh = false, false
		}
		return
	}
	a.renewed = cur.renewed
	if a.term != nil && cur.sess != nil && !a.lockLost() {
		a.extend(cur.renewed.Add(a.cfg.TTL - a.cfg.MarginFor(a.cfg.TTL)))
	}
	if a.renewWanted && a.term == nil {
		a.renewWanted, a.tryAt = false, time.Now()
	}
}

// dropReleases answers resignations whose session is gone: its locks are
// released with it.
func (a *actor) dropReleases() {
	for _, r := range a.releases {
		if r.reply != nil {
			r.reply <- nil
		}
	}
	a.releases = nil
}

// releaseShared, at shutdown in shared mode, releases the locks of ended
// terms one by one (after their work returned) instead of closing the
// session, which other campaigns still use.
func (a *actor) releaseShared() {
	for _, r := range a.releases {
		if r.sess == nil || r.sess != a.sess {
			continue
		}
		name, token := a.e.slots[r.term.event.Slot], r.term.event.Token
		ctx, cancel := context.WithTimeout(context.WithoutCancel(a.ctx), a.cfg.TTL)
		err := r.sess.Release(ctx, name, token, 0)
		cancel()
		if err != nil && !errors.Is(err, backends.ErrNotHeld) {
			// The session outlives this campaign: leave the release to
			// the candidate, which retries it at each renewal.
			a.shared.orphan(name, token, a.gen)
		}
	}
	if a.inLines && isDequeuer(a.sess) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(a.ctx), a.cfg.TTL)
		for _, name := range a.e.slots {
			_ = a.sess.(backends.Dequeuer).Dequeue(ctx, name) // the session lives on: leave its lines
		}
		cancel()
	}
	if a.gate != nil && a.gate.own == nil {
		if r, ok := a.sess.(backends.Registrar); ok {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(a.ctx), a.cfg.TTL)
			_ = r.Deregister(ctx, a.e.name) // the entry would outlive the campaign
			cancel()
		}
	}
}
