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
// every change of it: a new generation means the old session is gone, with
// every lock of it, and the campaign starts over on the new one; a renewal
// clears the last failure (the deadline follows it by itself, see
// term.live); a change without a renewal is a pushed loss, and the term's
// lock is looked up in Lost; a session that is stopping ends the campaign.
func (a *actor) adopt() {
	cur := a.on.current()
	if cur.gen != a.on.gen || (a.on.sess == nil && cur.sess != nil) {
		a.startOver(cur)
	} else {
		if !a.on.renewed.Equal(cur.renewed) && cur.failing == nil {
			a.fail.last = nil // not the backoff: a renewal says nothing of the calls that failed
		}
		a.on.renewed = cur.renewed
		if a.term != nil && cur.sess != nil {
			a.lockLost()
		}
	}
	switch {
	case !cur.closing:
	case a.private() && cur.fatal != nil:
		a.stop(events.ErrSessionLost, cur.fatal)
	default:
		a.stop(events.ErrResigned, ErrClosed)
	}
}

// startOver moves the campaign to the session's generation in cur.
func (a *actor) startOver(cur shared) {
	if cur.gen != a.on.gen {
		if a.term != nil {
			a.revoke(sessionLost("the session was replaced"))
		}
		a.cfg().Logger.Debug("new session", "name", a.e.name, "gen", cur.gen, "dropped releases", len(a.releases))
		a.dropReleases() // the old session's locks went with it
	}
	a.on.sess, a.on.gen, a.on.renewed, a.doubt = cur.sess, cur.gen, cur.renewed, nil
	a.at.try = time.Now()
	if a.gate != nil {
		a.gate.registered, a.gate.fresh = false, false
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
		// The entry would outlive the campaign.
		r := a.registry()
		_ = a.inTurn(laneFree, func(ctx context.Context) error { return r.Deregister(ctx, a.e.name) })
	}
}

// inTurn runs f on the session when its turn comes, bounded (turn
// included) by the TTL: for the calls of a stop, which Run's context may
// no longer allow.
func (a *actor) inTurn(lane int, f func(ctx context.Context) error) error {
	return a.on.release(a.ctx, lane, a.cfg().TTL, f)
}
