package history

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"
)

// The rules Check enforces, as Violation.Rule.
const (
	RulePairing  = "pairing"  // every Elected is followed by exactly one Revoked of its term, or by its node's death
	RuleTokens   = "tokens"   // tokens of one lock strictly increase in the order terms begin
	RuleOverlap  = "overlap"  // no two nodes hold one lock at once, unless the older was paused, or its lock was tampered with and it revoked within Config.Tamper
	RuleFence    = "fence"    // the fenced resource took no stale write, and no token of two terms
	RuleCrash    = "crash"    // after a leader's SIGKILL, a new leader within Config.Crash
	RuleGraceful = "graceful" // after a leader's SIGTERM, a new leader within Config.Graceful
	RuleSettle   = "settle"   // beliefs match the backend within Config.Settle of a heal
	RuleLeak     = "leak"     // no goroutine outlives a graceful exit
)

// Violation is one broken rule.
type Violation struct {
	Rule   string
	Detail string
}

// String formats v as "rule: detail".
func (v Violation) String() string { return v.Rule + ": " + v.Detail }

// Report is what Check found.
type Report struct {
	Terms      []Term
	Faults     map[FaultKind]int
	Violations []Violation
	// Excused counts overlaps explained by a pause or stall of the older
	// holder: fencing, not timing, protects a resource from those.
	Excused int
	// Tampered counts overlaps after the older holder's lock was deleted
	// behind its back, each ended by the older holder's Revoked within
	// Config.Tamper of the deletion.
	Tampered int
	// Crash and Graceful are the measured failovers, from the SIGKILL or
	// SIGTERM of a leader to its lock's next Elected, in fault order.
	// Failovers while another fault was in force are not measured.
	Crash, Graceful []time.Duration
	// StaleRejected counts writes the fenced resource refused.
	StaleRejected int
	// Leaked is the total of History.Leaks.
	Leaked int
	// Outage is how long the harness or the server stalled in the run,
	// and Net counts the failovers, settles and revocations after a tamper
	// that took longer than their bounds in wall-clock time and passed only
	// net of the outages within them (Config.NetOfOutages).
	Outage time.Duration
	Net    int
}

// Check returns every violation in h, and the figures of the run.
func Check(h History, cfg Config) Report {
	r := Report{Faults: map[FaultKind]int{}}
	for _, f := range h.Faults {
		r.Faults[f.Kind]++
	}
	out := outagesOf(h.Faults)
	r.Outage = out.total()
	r.Terms = terms(h, &r)
	byKey := map[Key][]Term{}
	for _, t := range r.Terms {
		byKey[t.Key] = append(byKey[t.Key], t)
	}
	for _, ts := range sortedGroups(byKey) {
		checkTokens(ts, &r)
		checkOverlap(ts, h.Faults, cfg, out, &r)
	}
	checkFence(h, &r)
	checkFailover(h, cfg, out, &r)
	for _, s := range h.Settles {
		switch {
		case s.Agreed.IsZero():
			r.fail(RuleSettle, "beliefs and the backend still disagreed when the harness gave up after the heal at %v: %s", stamp(s.Healed), s.Detail)
		case !r.within(cfg, out, s.Healed, s.Agreed, cfg.Settle):
			r.fail(RuleSettle, "beliefs and the backend agreed %v after the heal at %v (%v of it an outage), bound %v", s.Agreed.Sub(s.Healed), stamp(s.Healed), out.within(s.Healed, s.Agreed), cfg.Settle)
		}
	}
	for node, n := range h.Leaks {
		r.Leaked += n
		if n > 0 {
			r.fail(RuleLeak, "%d goroutines left in %q", n, node)
		}
	}
	return r
}

// within reports whether [from, to] is no longer than bound: in
// wall-clock time, or net of the outages in it if cfg says so (counted in
// r.Net when only that passes).
func (r *Report) within(cfg Config, out outages, from, to time.Time, bound time.Duration) bool {
	d := to.Sub(from)
	if d <= bound {
		return true
	}
	if cfg.NetOfOutages && d-out.within(from, to) <= bound {
		r.Net++
		return true
	}
	return false
}

func (r *Report) fail(rule, format string, args ...any) {
	r.Violations = append(r.Violations, Violation{rule, fmt.Sprintf(format, args...)})
}

// terms pairs every node's Elected with its Revoked; a term still open
// when its node was killed ends at the kill.
func terms(h History, r *Report) []Term {
	killed := map[string]time.Time{}
	for _, f := range h.Faults {
		if f.Kind == Kill {
			killed[f.Node] = f.From
		}
	}
	open := map[string]Event{}
	var out []Term
	for _, e := range h.Events {
		o, holding := open[e.Node]
		switch {
		case e.Kind == Elected && holding:
			r.fail(RulePairing, "%s elected for %v (token %d) while holding %v (token %d)", e.Node, e.Key, e.Token, o.Key, o.Token)
		case e.Kind == Elected:
			open[e.Node] = e
		case e.Kind == Revoked && (!holding || o.Key != e.Key || o.Token != e.Token):
			r.fail(RulePairing, "%s revoked from %v (token %d) at %v without that term", e.Node, e.Key, e.Token, stamp(e.Time))
		case e.Kind == Revoked:
			delete(open, e.Node)
			out = append(out, Term{e.Node, e.Key, e.Token, o.Time, e.Time, false})
		default:
			r.fail(RulePairing, "%s printed an event of kind %q", e.Node, e.Kind)
		}
	}
	for _, node := range slices.Sorted(maps.Keys(open)) {
		o := open[node]
		if at, ok := killed[node]; ok && !at.Before(o.Time) {
			out = append(out, Term{node, o.Key, o.Token, o.Time, at, true})
			continue
		}
		r.fail(RulePairing, "%s's term %d on %v from %v never ended", node, o.Token, o.Key, stamp(o.Time))
		out = append(out, Term{node, o.Key, o.Token, o.Time, time.Time{}, false})
	}
	return out
}

// checkTokens wants one lock's tokens to increase in the order its terms
// began. ts is sorted by From.
func checkTokens(ts []Term, r *Report) {
	for i := 1; i < len(ts); i++ {
		if p, c := ts[i-1], ts[i]; c.Token <= p.Token {
			r.fail(RuleTokens, "%v: %s's term from %v has token %d, not above %s's %d from %v", c.Key, c.Node, stamp(c.From), c.Token, p.Node, p.Token, stamp(p.From))
		}
	}
}

// checkOverlap wants no two terms of one lock to overlap, unless the older
// one's node was paused or stalled during it, or its lock was tampered with
// and it revoked within cfg.Tamper of that (net of outages if cfg says
// so: it learns of the loss from the server). ts is sorted by From.
func checkOverlap(ts []Term, faults []Fault, cfg Config, out outages, r *Report) {
	for j, c := range ts {
		for _, p := range ts[:j] {
			end := p.To
			if end.IsZero() || !c.From.Before(end) || p.Node == c.Node {
				continue
			}
			if paused(faults, p.Node, p.From, end) {
				r.Excused++
				continue
			}
			if at, ok := tampered(faults, p.Node, p.From, end); ok && r.within(cfg, out, at, end, cfg.Tamper) {
				r.Tampered++
				continue
			}
			r.fail(RuleOverlap, "%v: %s held it (token %d) until %v, %s (token %d) from %v: %v at once", c.Key, p.Node, p.Token, stamp(end), c.Node, c.Token, stamp(c.From), end.Sub(c.From))
		}
	}
}

// paused reports whether node was paused or stalled at some time in
// [from, to].
func paused(faults []Fault, node string, from, to time.Time) bool {
	for _, f := range faults {
		if (f.Kind == Pause || f.Kind == Stall) && f.Node == node && !f.To.Before(from) && !f.From.After(to) {
			return true
		}
	}
	return false
}

// tampered returns the last time node's lock was tampered with in
// [from, to], if it was.
func tampered(faults []Fault, node string, from, to time.Time) (time.Time, bool) {
	var at time.Time
	for _, f := range faults {
		if f.Kind == Tamper && f.Node == node && !f.From.Before(from) && !f.From.After(to) && f.From.After(at) {
			at = f.From
		}
	}
	return at, !at.IsZero()
}

// checkFence replays the resource's log: a write below the highest
// accepted token of its lock must be refused and any other accepted; an
// accepted token belongs to one node's term.
func checkFence(h History, r *Report) {
	elected := map[Holding]map[Key]bool{}
	for _, e := range h.Events {
		if e.Kind == Elected {
			k := Holding{e.Node, e.Token}
			if elected[k] == nil {
				elected[k] = map[Key]bool{}
			}
			elected[k][e.Key] = true
		}
	}
	top := map[Key]Holding{}
	for _, w := range h.Writes {
		if !elected[Holding{w.Node, w.Token}][w.Key] {
			r.fail(RuleFence, "%s wrote %v with token %d it was never elected with", w.Node, w.Key, w.Token)
		}
		t, seen := top[w.Key]
		stale := seen && w.Token < t.Token
		switch {
		case stale && w.Accepted:
			r.fail(RuleFence, "%v: accepted %s's token %d after %s's %d", w.Key, w.Node, w.Token, t.Node, t.Token)
		case stale:
			r.StaleRejected++
		case !w.Accepted:
			r.fail(RuleFence, "%v: refused %s's current token %d", w.Key, w.Node, w.Token)
		case seen && w.Token == t.Token && w.Node != t.Node:
			r.fail(RuleFence, "%v: token %d accepted from both %s and %s", w.Key, w.Token, t.Node, w.Node)
		}
		if !stale {
			top[w.Key] = Holding{w.Node, w.Token}
		}
	}
}

// checkFailover measures, for each SIGKILL or SIGTERM of a leader, the
// time to its lock's next Elected, and holds it to its bound. A failover
// during another fault (before the next Elected, or before the bound if
// that comes first) is not measured.
func checkFailover(h History, cfg Config, out outages, r *Report) {
	for _, f := range h.Faults {
		if f.Kind != Kill && f.Kind != Stop {
			continue
		}
		held, ok := termAt(r.Terms, f.Node, f.From)
		if !ok {
			continue // not a leader
		}
		bound, rule, into := cfg.Crash, RuleCrash, &r.Crash
		if f.Kind == Stop {
			bound, rule, into = cfg.Graceful, RuleGraceful, &r.Graceful
		}
		next, ok := nextElected(h.Events, held.Key, f.From)
		until := next
		if !ok || next.After(f.From.Add(bound)) {
			until = f.From.Add(bound)
		}
		if disturbed(h.Faults, f, until) {
			continue
		}
		if !ok {
			r.fail(rule, "no leader of %v after %s's %s at %v", held.Key, f.Node, f.Kind, stamp(f.From))
			continue
		}
		d := next.Sub(f.From)
		*into = append(*into, d)
		if !r.within(cfg, out, f.From, next, bound) {
			r.fail(rule, "%v: next leader %v after %s's %s at %v (%v of it an outage), bound %v", held.Key, d, f.Node, f.Kind, stamp(f.From), out.within(f.From, next), bound)
		}
	}
}

// termAt returns node's term in force at t.
func termAt(ts []Term, node string, t time.Time) (Term, bool) {
	for _, x := range ts {
		if x.Node == node && !t.Before(x.From) && (x.To.IsZero() || !t.After(x.To)) {
			return x, true
		}
	}
	return Term{}, false
}

// nextElected returns the time of the first Elected of k after t.
func nextElected(evs []Event, k Key, t time.Time) (time.Time, bool) {
	var best time.Time
	for _, e := range evs {
		if e.Kind == Elected && e.Key == k && e.Time.After(t) && (best.IsZero() || e.Time.Before(best)) {
			best = e.Time
		}
	}
	return best, !best.IsZero()
}

// disturbed reports whether a fault other than f and other than a stall
// was in force at some time in [f.From, until].
func disturbed(faults []Fault, f Fault, until time.Time) bool {
	for _, o := range faults {
		if o != f && o.Kind != Stall && !o.To.Before(f.From) && !o.From.After(until) {
			return true
		}
	}
	return false
}

// sortedGroups returns the values of m in key order, each sorted by From
// then token.
func sortedGroups(m map[Key][]Term) [][]Term {
	keys := slices.SortedFunc(maps.Keys(m), func(a, b Key) int { return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Slot, b.Slot)) })
	out := make([][]Term, 0, len(keys))
	for _, k := range keys {
		ts := m[k]
		slices.SortFunc(ts, func(a, b Term) int { return cmp.Or(a.From.Compare(b.From), cmp.Compare(a.Token, b.Token)) })
		out = append(out, ts)
	}
	return out
}

// stamp formats t for messages: wall-clock time with microseconds.
func stamp(t time.Time) string { return t.Format("15:04:05.000000") }
