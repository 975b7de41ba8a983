package record

import (
	"context"
	"time"

	"github.com/hustings/hustings/backends/internal/hub"
)

// Losses returns the channel signalled when Lost gains a lock (see
// backends.Session), or nil if the Store's driver is no Notifier. The
// first call joins the session to the Store's feed (started by it, and
// again by Acquire and KeepAlive if it broke), which then reports a write
// to a lock record after the session's take, and the end of the session's
// own record. Close leaves it.
func (ss *session) Losses() <-chan struct{} {
	if ss.s.hub.feed == nil {
		return nil
	}
	ss.mu.Lock()
	first := !ss.push
	ss.push = true
	ss.mu.Unlock()
	if first {
		ss.keep()
	}
	return ss.ledger.Losses()
}

// keep joins the session to the Store's feed (starting it if none runs)
// if its losses are pushed and it is not closed, and returns the feed's
// run; nil if it did not join. It holds ss.mu throughout, so that Close,
// which sets closed before it leaves the feed (Unkeep), cannot overtake
// it: a join after Close left would hold the feed for a closed session,
// for good. The hub's lock, which Keep takes, is never held while ss.mu
// is taken.
func (ss *session) keep() *hub.Run {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if !ss.push || ss.closed {
		return nil
	}
	keepHook(ss)
	return ss.s.hub.h.Keep(ss)
}

// keepHook runs in keep between its check and the Keep; tests set it to
// interleave a Close there.
var keepHook = func(*session) {}

// feedUp starts the Store's feed if the session's losses are pushed and
// none runs, and waits (bounded by ctx) until it is confirmed, so that
// it covers the writes after the call; it returns the feed's run, nil if
// the losses are not pushed or the feed failed (KeepAlive then finds
// them).
func (ss *session) feedUp(ctx context.Context) *hub.Run {
	r := ss.keep()
	if r == nil || r.Wait(ctx) != nil {
		return nil
	}
	return r
}

// confirmedByFeed renews the session alone, and confirms its locks by the
// feed, if the feed's run r reports its progress in the store's one
// sequence (Feed.Progress) and has covered every held lock since its
// grant: once r delivered the renewal, it delivered every earlier write
// to the locks' records, and pushed their losses. It reports false (the
// caller renews and reads the locks) if r does not cover them, or does
// not deliver the renewal within feedLag. A session found expired is
// ErrSessionLost, through the caller's renewal.
func (ss *session) confirmedByFeed(ctx context.Context, r *hub.Run, start time.Time) bool {
	if r == nil || r.Context().Err() != nil || r.Advanced() == 0 {
		return false
	}
	rec, held := ss.record()
	ss.mu.Lock()
	for _, l := range held {
		if ss.granted[l.Name].cover != r {
			ss.mu.Unlock()
			return false
		}
	}
	ss.mu.Unlock()
	var rn Renewal
	err := ss.s.call(ctx, "keep-alive", func() (err error) {
		rn, err = ss.s.d.Renew(ctx, rec, nil)
		return err
	})
	if err != nil || !rn.Alive {
		return false
	}
	ss.renewed(rn.Version, start, nil, nil)
	return r.Reached(ctx, rn.Version, feedLag)
}

// feedLag bounds how long KeepAlive waits for the feed to deliver its
// renewal before it reads the locks instead.
const feedLag = 500 * time.Millisecond

// renewed records a renewal at version, whose call began at start, and
// which read the held locks while the feed's run r (nil: none) ran: r
// covers them from then on.
func (ss *session) renewed(version uint64, start time.Time, r *hub.Run, held []Lock) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.version = max(ss.version, version)
	if start.After(ss.since) {
		ss.since = start
	}
	if r == nil {
		return
	}
	for _, l := range held {
		if g, ok := ss.granted[l.Name]; ok {
			g.cover = r
			ss.granted[l.Name] = g
		}
	}
}

// pushed is the feed's report of a write to lock record l.Name: a lock
// the session was granted at an older version is gone (its own releases
// leave the ledger before they write).
func (ss *session) pushed(l Lock) {
	ss.mu.Lock()
	g, ok := ss.granted[l.Name]
	ss.mu.Unlock()
	if ok && l.Version > g.version {
		ss.ledger.Gone(l.Name, g.token)
	}
}

// ended is the feed's report that the session record is gone: every lock
// is, with it.
func (ss *session) ended() {
	if ss.usable() != nil {
		return
	}
	for name, token := range ss.ledger.Held() {
		ss.ledger.Gone(name, token)
	}
}
