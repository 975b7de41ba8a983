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

// adopt takes in the session's state, when the campaign begins and at
// every change of it: a renewal extends the term; a new generation means
// the old session is gone, with every lock of it, and the campaign starts
// over on the new one; a session that is stopping ends the campaign.
func (a *actor) adopt() {
	cur := a.on.current()
	if cur.closing {
		if a.on.private && cur.fatal != nil {
			a.end.fatal = cur.fatal
		} else {
			a.end.gone = true
		}
	}
	if cur.failing != nil && cur.failing != a.fail.last {
		a.fail.last = cur.failing
		a.e.setState(func(s *State) { s.Err = cur.failing })
	}
	if cur.gen != a.on.gen || (a.on.sess == nil && cur.sess != nil) {
		if a.term != nil && cur.gen != a.on.gen {
			a.revoke(sessionLost("the session was replaced"))
		}
		if cur.gen != a.on.gen {
			a.cfg.Logger.Debug("new session", "name", a.e.name, "gen", cur.gen, "dropped releases", len(a.releases))
			a.dropReleases() // the old session's locks went with it
		}
		a.on.sess, a.on.gen, a.on.renewed, a.doubt = cur.sess, cur.gen, cur.renewed, nil
		a.at.try = time.Now()
		if a.gate != nil {
			a.gate.registered, a.gate.fresh = false, false
		}
		return
	}
	renewed := !a.on.renewed.Equal(cur.renewed)
	a.on.renewed = cur.renewed
	if renewed && cur.failing == nil {
		a.clearErr()
	}
	// A change without a renewal is a pushed loss: look at Lost.
	if a.term != nil && cur.sess != nil && !a.lockLost() && renewed {
		a.extend(cur.renewed.Add(a.cfg.TTL - a.cfg.MarginFor(a.cfg.TTL)))
	}
	if a.term != nil { // moved, or the session's expiry alarm told it: its own takes over
		a.armDeadline(a.e.deadlineOf(a.term))
	}
	if a.at.renewWanted && a.term == nil {
		a.at.renewWanted, a.at.try = false, time.Now()
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

// releaseShared, at the end of a campaign on a session that lives on,
// releases the locks of ended terms one by one (after their work
// returned) and disowns the locks in doubt, instead of closing the
// session, which other campaigns still use. Its calls wait for their turn
// on the session like any other. A session that is closing frees them all
// at once when it ends.
func (a *actor) releaseShared() {
	if cur := a.on.current(); cur.closing || cur.gen != a.on.gen || a.on.sess == nil {
		return
	}
	for _, r := range a.releases {
		if r.sess == nil || r.sess != a.on.sess {
			continue
		}
		name, token := a.e.slots[r.term.event.Slot], r.term.event.Token
		err := a.inTurn(laneFree, func(ctx context.Context) error { return r.sess.Release(ctx, name, token, 0) })
		if err != nil && !errors.Is(err, backends.ErrNotHeld) {
			// The session outlives this campaign: leave the release to
			// the session, which retries it at each renewal.
			a.on.orphan(name, token, a.on.gen)
		}
	}
	if len(a.doubt) > 0 {
		_ = a.inTurn(laneFree, func(ctx context.Context) error {
			a.doubt = disownAll(ctx, a.on.sess, a.doubt)
			return nil
		})
	}
	if a.gate != nil && a.gate.own == nil {
		if r, ok := a.on.sess.(backends.Registrar); ok {
			// The entry would outlive the campaign.
			_ = a.inTurn(laneFree, func(ctx context.Context) error { return r.Deregister(ctx, a.e.name) })
		}
	}
}

// inTurn runs f on the session when its turn comes, bounded (turn
// included) by the TTL: for the calls of a stop, which Run's context may
// no longer allow.
func (a *actor) inTurn(lane int, f func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(a.ctx), a.cfg.TTL)
	defer cancel()
	return a.on.inTurn(ctx, lane, a.cfg.TTL, f)
}
