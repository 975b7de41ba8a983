package elector

import "time"

// concern is one kind of backend call an actor schedules. Each says when
// it is next due (due); the actor starts the one due first whenever its
// op slot is free (startDue), earlier concerns first on a tie.
type concern uint8

const (
	releasing   concern = iota // the lock of a resigned or expired term
	registering                // the candidate's registry entry, with a strategy
	leaving                    // the locks in doubt, once elected or out of the race
	auditing                   // the holders, while the candidate keeps losing
	trying                     // the lock: a watch, a rank or the acquire first if needed
	ranking                    // a holder's rank, with preemption
	concerns
)

// due returns when c is next due, or never.
func (a *actor) due(c concern, now time.Time) time.Time {
	g := a.gate
	if a.on.sess == nil && c != releasing {
		return never // a session arrives through adopt
	}
	switch {
	case c == releasing && len(a.releases) > 0:
		return a.at.release
	case c == registering && g != nil && !g.registered:
		return g.registerAt
	case c == leaving && len(a.doubt) > 0 && (a.term != nil || a.outOfRace(now)):
		return a.at.leave
	case c == auditing && a.term == nil && a.losing():
		return a.audit.at
	case c == trying && a.term == nil && len(a.releases) == 0:
		return later(a.at.try, a.at.notBefore)
	case c == ranking && a.term != nil && g != nil && a.cfg().Preempt > 0:
		return g.rankedAt.Add(a.cfg().Retry)
	}
	return never
}

// start starts c, which is due. Every concern but trying starts a call, or
// stops being due; trying may instead move its own time later.
func (a *actor) start(c concern, now time.Time) {
	switch c {
	case releasing:
		a.startRelease()
	case registering:
		a.startRegister()
	case leaving:
		a.startLeave()
	case auditing:
		a.startAudit()
	case trying:
		a.startTry(now)
	case ranking:
		a.startRank()
	}
}

// startDue starts the call due first while the op slot is free, and
// returns when the next of those not yet due is: never while a call is in
// flight (its result settles again) or nothing is wanted.
func (a *actor) startDue(now time.Time) time.Time {
	for a.op == nil {
		first, at := concerns, never
		for c := range concerns {
			if t := a.due(c, now); t.Before(at) {
				first, at = c, t
			}
		}
		if first == concerns || now.Before(at) {
			return at
		}
		a.start(first, now)
	}
	return never
}

// startTry starts what a try for the lock needs next: a watch, a fresh
// rank (with a strategy), or the acquire itself. A candidate the strategy
// does not prefer, or whose earlier release of the lock is pending, starts
// nothing and waits for its next chance instead.
func (a *actor) startTry(now time.Time) {
	g := a.gate
	switch {
	case a.needWatch(now):
		a.startWatch()
	case g != nil && (!g.fresh || !now.Before(g.rankedAt.Add(a.cfg().Retry))):
		a.startRank()
	case g != nil && !g.eligible(now):
		next := g.rankedAt.Add(a.cfg().RetryPause())
		if !g.freeSince.IsZero() {
			next = earlier(next, g.freeSince.Add(g.cfg.Patience))
		}
		a.at.try, g.fresh = next, false
	case a.on.orphaned(a.e.slots):
		a.at.try = now.Add(a.cfg().RetryPause())
	default:
		a.startAcquire()
	}
}

// outOfRace reports whether the strategy, as last ranked, does not prefer
// the candidate: it then stops trying, and leaves the locks in doubt.
func (a *actor) outOfRace(now time.Time) bool {
	g := a.gate
	return g != nil && g.fresh && now.Before(g.rankedAt.Add(a.cfg().Retry)) && !g.eligible(now)
}
