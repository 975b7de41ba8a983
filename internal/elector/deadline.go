package elector

import (
	"errors"
	"fmt"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
)

// expiry is a session's deadline alarm: one timer for every term on the
// session, since one renewal moves all their deadlines. It goes off when
// the last renewal's deadline comes for the campaign with the largest
// safety margin, and then tells every campaign, each of which arms an
// alarm of its own for its own deadline (actor.expireIfDue). A renewal
// moves the one timer and tells nobody; a storm of campaigns elected
// after one renewal costs no timer each, nor a herd of them going off
// together. Guarded by the session's mutex.
type expiry struct {
	t       *time.Timer
	at      time.Time     // when t goes off; zero when it is not set
	renewed time.Time     // the renewal it was set for
	margin  time.Duration // the largest safety margin of the campaigns that joined
}

// follow sets the alarm for s's renewal, once for each renewal (a change
// that is not one, such as the alarm's own telling, leaves it be), or
// stops it when s has no session or the session is closing.
func (x *expiry) follow(c *Session, s shared) {
	if s.sess == nil || s.closing {
		x.stop()
		x.renewed = time.Time{}
		return
	}
	if s.renewed.Equal(x.renewed) {
		return
	}
	x.renewed = s.renewed
	x.arm(c)
}

func (x *expiry) arm(c *Session) {
	x.at = x.renewed.Add(c.cfg.TTL - x.margin)
	if x.t == nil {
		x.t = time.AfterFunc(time.Until(x.at), c.expire)
		return
	}
	x.t.Reset(time.Until(x.at))
}

func (x *expiry) stop() {
	if x.t != nil {
		x.t.Stop()
	}
	x.at = time.Time{}
}

// join takes in the margin of a campaign that joined the session, moving
// the alarm earlier if it is larger than any before.
func (x *expiry) join(c *Session, margin time.Duration) {
	if margin <= x.margin {
		return
	}
	x.margin = margin
	if !x.at.IsZero() {
		x.arm(c)
	}
}

// covers reports whether the alarm will go off no later than d.
func (x *expiry) covers(d time.Time) bool { return !x.at.IsZero() && !x.at.After(d) }

// expire is the alarm going off: every campaign is told, and looks at its
// own deadline. A call left over from before the alarm was moved does
// nothing.
func (c *Session) expire() {
	c.mu.Lock()
	if c.expiry.at.IsZero() || time.Now().Before(c.expiry.at) {
		c.mu.Unlock()
		return
	}
	c.expiry.at = time.Time{}
	cur := c.cur
	c.mu.Unlock()
	c.set(cur)
}

// covers reports whether the session's expiry alarm will tell the
// campaigns before deadline d comes.
func (c *Session) covers(d time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.expiry.covers(d)
}

// renewal returns the start of the session's last successful Open or
// KeepAlive if the session is still generation gen, else the zero time.
func (c *Session) renewal(gen uint64) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur.gen != gen || c.cur.sess == nil {
		return time.Time{}
	}
	return c.cur.renewed
}

// lastRenewal returns the start of the last renewal of the session the
// campaign is on, which the session may not have told it of yet (see
// Session.renew), or what it was told if the session was replaced since.
func (a *actor) lastRenewal() time.Time { return later(a.on.renewed, a.on.renewal(a.on.gen)) }

// expireIfDue ends the term at its local deadline, whatever the backend is
// doing, and returns when it is next due: the deadline, or never while the
// session's expiry alarm goes off no later (that alarm then tells the
// campaign; see expiry) or no term is in force. A renewal the campaign has
// not been told of is taken in first.
func (a *actor) expireIfDue(now time.Time) time.Time {
	if a.term == nil {
		return never
	}
	if a.lastRenewal().After(a.on.renewed) {
		a.adopt()
		if a.term == nil || a.end.phase != running {
			return never
		}
	}
	if d := a.term.live(); now.Before(d) {
		if a.on.covers(d) {
			return never
		}
		return d
	}
	reason := events.ErrLeaseExpired
	cause := a.fail.last
	renewing, failing := a.on.health()
	if cause == nil {
		cause = failing
	}
	if cause == nil && renewing {
		cause = errors.New("the renewal in flight had no answer")
	}
	if cause != nil {
		if !errors.Is(cause, backends.ErrUnavailable) {
			cause = fmt.Errorf("%w: %w", backends.ErrUnavailable, cause)
		}
		reason = fmt.Errorf("%w: %w", reason, cause)
	}
	t := a.revoke(reason)
	// The session may live on: release the lock before trying again, so
	// the next term never reuses this one's token.
	a.releases = append(a.releases, release{term: t, sess: a.on.sess})
	return never
}
