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

// adopt takes in the shared session's state: a renewal extends the term;
// a new generation means the old session is gone, with every lock of it,
// and the campaign starts over on the new one.
func (a *actor) adopt() {
	cur, changed := a.shared.state()
	a.sharedChanged = changed
	a.keepAt, a.openAt = never, never
	if cur.closing {
		a.sessionGone = true
	}
	if cur.gen != a.gen || (a.sess == nil && cur.sess != nil) {
		if a.term != nil && cur.gen != a.gen {
			a.revoke(sessionLost("the shared session was replaced"))
		}
		if cur.gen != a.gen {
			a.dropReleases() // the old session's locks went with it
		}
		a.sess, a.gen, a.renewed, a.doubt = cur.sess, cur.gen, cur.renewed, nil
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
// terms one by one (after their work returned) and disowns the locks in
// doubt, instead of closing the session, which other campaigns still use.
// Its calls wait for their turn on the session like any other. A
// session that is closing frees them all at once when it ends.
func (a *actor) releaseShared() {
	if cur, _ := a.shared.state(); cur.closing || cur.gen != a.gen {
		return
	}
	for _, r := range a.releases {
		if r.sess == nil || r.sess != a.sess {
			continue
		}
		name, token := a.e.slots[r.term.event.Slot], r.term.event.Token
		err := a.inTurn(laneFree, func(ctx context.Context) error { return r.sess.Release(ctx, name, token, 0) })
		if err != nil && !errors.Is(err, backends.ErrNotHeld) {
			// The session outlives this campaign: leave the release to
			// the session, which retries it at each renewal.
			a.shared.orphan(name, token, a.gen)
		}
	}
	if len(a.doubt) > 0 {
		_ = a.inTurn(laneFree, func(ctx context.Context) error {
			a.doubt = disownAll(ctx, a.sess, a.doubt)
			return nil
		})
	}
	if a.gate != nil && a.gate.own == nil {
		if r, ok := a.sess.(backends.Registrar); ok {
			// The entry would outlive the campaign.
			_ = a.inTurn(laneFree, func(ctx context.Context) error { return r.Deregister(ctx, a.e.name) })
		}
	}
}

// inTurn runs f on the shared session when its turn comes, bounded (turn
// included) by the TTL: for the calls of a shutdown, which Run's context
// may no longer allow.
func (a *actor) inTurn(lane int, f func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(a.ctx), a.cfg.TTL)
	defer cancel()
	return a.shared.inTurn(ctx, lane, a.cfg.TTL, f)
}
