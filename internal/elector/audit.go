package elector

import (
	"context"
	"fmt"
	"time"

	"github.com/hustings/hustings/backends"
)

// audit looks, at most once per TTL while a candidate keeps losing, for
// two misconfigurations that the locks alone cannot show: another live
// candidate with this candidate's ID, and group candidates that disagree on
// the number of slots. It reads the slots' holders, and for a group the
// holder of the slot one past the last: someone holds it only if it runs
// with more slots. Safety never depends on it (the locks keep each slot to
// one holder); it makes the mistake visible in State().Err and the log.
type audit struct {
	at    time.Time       // next audit due
	dup   backends.Holder // a holder with our ID, of slot dupAt, first seen at since
	dupAt int
	since time.Time
	err   error // what the last audit found; nil if nothing
}

// startAudit reads the holders.
func (a *actor) startAudit() {
	b, names := a.e.backend, a.e.slots
	if len(names) > 1 {
		names = SlotNames(a.e.name, len(names)+1)
	}
	a.call(opAudit, a.cfg.TTL, nil, func(ctx context.Context, sent error) outcome {
		hs := make([]backends.Holder, len(names))
		err := sent
		for i, n := range names {
			if err != nil {
				break
			}
			hs[i], err = b.Holder(ctx, n)
		}
		return outcome{apply: func() { a.audited(hs, err) }}
	})
}

// audited judges what startAudit read. A lock held under our ID by another
// session is only reported once it has been so for two TTLs: a restarted
// process with a fixed ID sees its old session's lock until that expires,
// which the server may do a little after the TTL (etcd rounds leases up to
// whole seconds and checks them every 500 ms).
func (a *actor) audited(holders []backends.Holder, err error) {
	now := time.Now()
	au := &a.audit
	au.at = now.Add(a.cfg.TTL)
	if err != nil {
		return // an outage; the calls that matter report it
	}
	n := len(a.e.slots)
	var found error
	dup := false
	for i, h := range holders[:n] {
		if h.ID != a.cfg.ID {
			continue
		}
		dup = true
		if au.dup != h || au.dupAt != i {
			au.dup, au.dupAt, au.since = h, i, now
		} else if now.Sub(au.since) >= 2*a.cfg.TTL {
			found = fmt.Errorf("%w: lock %q has been held for %v by another session with this candidate's ID %q (token %d): candidate IDs must be unique", ErrInvalid, a.e.slots[i], now.Sub(au.since).Round(time.Millisecond), h.ID, h.Token)
		}
	}
	if !dup {
		au.dup = backends.Holder{}
	}
	if n > 1 && holders[n].ID != "" {
		found = fmt.Errorf("%w: group %q has %d slots here, but %q holds slot %d: its candidates disagree on the number of slots", ErrInvalid, a.e.name, n, holders[n].ID, n)
	}
	au.err = found
	if found != nil {
		a.cfg.Logger.Error("misconfigured", "name", a.e.name, "id", a.cfg.ID, "err", found)
		a.e.setState(func(s *State) { s.Err = found })
	}
}
