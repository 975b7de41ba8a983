package elector

import (
	"context"
	"fmt"
	"slices"
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
	at       time.Time // next audit due; zero while holding, or before a try found the lock held
	dupSince time.Time // since when every audit found a slot held under our ID; zero if the last did not
	err      error     // what the last audit found; nil if nothing
}

// lost records that a try found the lock held, or the term's lock was
// lost: the campaign watches the lock from now on (needWatch), and audits
// once it has been losing for a TTL.
func (a *actor) lost() {
	if a.audit.at.IsZero() {
		a.audit.at = time.Now().Add(a.cfg().TTL)
	}
}

// losing reports whether a try found the lock held, or the term's lock
// was lost, since the last term began.
func (a *actor) losing() bool { return !a.audit.at.IsZero() }

// startAudit reads the holders.
func (a *actor) startAudit() {
	b, names := a.e.backend, a.e.slots
	if len(names) > 1 {
		names = SlotNames(a.e.name, len(names)+1)
	}
	a.call(opAudit, nil, func(ctx context.Context, sent error) outcome {
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
// session is only reported once audits have found one so for two TTLs: a
// restarted process with a fixed ID sees its old session's lock until that
// expires, which the server may do a little after the TTL.
func (a *actor) audited(holders []backends.Holder, err error) {
	cfg, au, now := a.cfg(), &a.audit, time.Now()
	au.at = now.Add(cfg.TTL)
	if err != nil {
		return // an outage; the calls that matter report it
	}
	n := len(a.e.slots)
	dup := slices.IndexFunc(holders[:n], func(h backends.Holder) bool { return h.ID == cfg.ID })
	var found error
	switch {
	case dup < 0:
		au.dupSince = time.Time{}
	case au.dupSince.IsZero():
		au.dupSince = now
	case now.Sub(au.dupSince) >= 2*cfg.TTL:
		found = fmt.Errorf("%w: lock %q has been held for %v by another session with this candidate's ID %q (token %d): candidate IDs must be unique", ErrInvalid, a.e.slots[dup], now.Sub(au.dupSince).Round(time.Millisecond), cfg.ID, holders[dup].Token)
	}
	if n > 1 && holders[n].ID != "" {
		found = fmt.Errorf("%w: group %q has %d slots here, but %q holds slot %d: its candidates disagree on the number of slots", ErrInvalid, a.e.name, n, holders[n].ID, n)
	}
	au.err = found
	if found != nil {
		cfg.Logger.Error("misconfigured", "name", a.e.name, "id", cfg.ID, "err", found)
	}
}
