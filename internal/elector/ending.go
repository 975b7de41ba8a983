package elector

// How a campaign ends: a resignation, a stop, and the finish that drains
// the term, releases the lock and answers whoever waits.

import (
	"time"

	"github.com/hustings/hustings/events"
)

// resign serves a Resign request: the term ends now, and the lock is
// released once the work bound to it returned.
func (a *actor) resign(req resignReq) {
	if a.term == nil || (req.token != 0 && a.term.event.Token != req.token) {
		req.done <- nil
		return
	}
	t := a.revoke(events.ErrResigned)
	a.releases = append(a.releases, release{term: t, sess: a.on.sess, reply: req.done})
	a.at.notBefore = time.Now().Add(a.cfg().RetryPause())
}

// stop ends the campaign: the term in force ends gracefully with reason,
// nothing new starts, and the call in flight is cancelled (a release is
// let finish). Run then returns err. settle starts finish once the call
// is back.
func (a *actor) stop(reason, err error) {
	if a.end.phase != running {
		return
	}
	a.end.phase, a.end.err = stopping, err
	if a.term != nil {
		a.releases = append(a.releases, release{term: a.revoke(reason), sess: a.on.sess})
	}
	if a.op != nil && a.op.kind != opRelease {
		a.op.cancel()
		a.op.stale = true
	}
}

// finish, in a goroutine of its own once the campaign is stopping and no
// call is in flight, waits for the work bound to ended terms, frees what
// the campaign holds on its session (or closes a private session, which
// frees it all), and only then answers pending resignations and lets Run
// return. Nothing else touches the actor's state by now: do refuses.
// Every call here uses a context bounded by the TTL.
func (a *actor) finish() {
	for _, r := range a.releases {
		a.drain(r.term)
	}
	a.wait.watch.Stop()
	a.deregister()
	if !a.private() {
		a.releaseShared()
	}
	a.e.mu.Lock()
	a.alarm.stop()
	stopCtx := a.end.stopCtx
	a.e.mu.Unlock()
	if stopCtx != nil {
		stopCtx()
	}
	a.wg.Wait()
	a.e.finish(a)
	for _, r := range a.releases {
		if r.reply != nil {
			r.reply <- nil
		}
	}
	a.releases = nil
}

// drain waits, bounded by the grace period and the term's deadline, for the
// work bound to t, which has ended, to return.
func (a *actor) drain(t *term) {
	drained := a.e.drainedCh(t)
	if drained == nil {
		return
	}
	limit := min(a.cfg().Grace, time.Until(t.final))
	timer := time.NewTimer(max(limit, 0))
	defer timer.Stop()
	select {
	case <-drained:
	case <-timer.C:
		a.cfg().Logger.Warn("work bound to the term outlived the grace period", "name", a.e.name, "token", t.event.Token)
	}
}
