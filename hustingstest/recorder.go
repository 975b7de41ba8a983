package hustingstest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/elector"
)

// Late is how long after its deadline a term may end before Check calls
// it late: a revocation is a timer's callback, and a busy machine runs it
// a little after the deadline (inside a testing/synctest bubble, never).
const Late = 100 * time.Millisecond

// Recorder records the terms of the campaigns and one-shot runs given its
// Option, and the writes their work reports with Wrote, and checks them
// with Check by the rules the chaos suite holds every backend to:
//
//   - at most one term in force per lock (per slot of a group), in the
//     order the campaigns of this process saw them begin and end, but
//     for the moment after a lock was taken behind its holder's back
//     (Tampered);
//   - tokens only grow from term to term of a lock (a candidate elected
//     again on a session that held on may get its own token back);
//   - every term ends by its deadline (within Late);
//   - every write lands within a term of its lock, under that term's
//     token, and no write's token is below an earlier write's (what a
//     fence at the resource refuses).
//
// It hears the terms from the engine as they begin and end, not through
// an events channel, so it misses none. It records one process: the
// campaigns of other processes are not in it. A Recorder is safe for
// concurrent use; its zero value is not (NewRecorder).
type Recorder struct {
	mu      sync.Mutex
	start   time.Time
	seq     int
	terms   []*recorded
	writes  []write
	tampers []write // Tampered: name and when, no token
}

// recorded is one term as the Recorder heard it.
type recorded struct {
	name     string
	slot     int
	holder   string
	token    events.Token
	run      bool // a one-shot run's, not a campaign's
	began    int  // seq at its start
	ended    int  // seq at its end; 0 while in force
	from, to time.Time
	deadline time.Time // as of its end
}

// write is one Wrote.
type write struct {
	name  string
	token events.Token
	seq   int
	at    time.Time
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder { return &Recorder{start: time.Now()} }

// Option makes a campaign, group, session or one-shot run (RunIfLeader,
// Every) report its terms to r. A session's option covers its own
// keep-alives only: give it to each campaign and run too.
func (r *Recorder) Option() campaign.Option {
	return elector.Opt("hustingstest.Recorder", elector.ForAll&^elector.ForObserve, func(c *elector.Config) {
		c.Hooks = append(c.Hooks, recorderHook{r: r})
	})
}

// Wrote records that work holding the lock name under token wrote to the
// resource it protects, now: call it where the write lands (after a
// fence, if the resource has one, accepted it).
func (r *Recorder) Wrote(name string, token events.Token) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	r.writes = append(r.writes, write{name: name, token: token, seq: r.seq, at: time.Now()})
}

// Tampered records that the store took the lock name (every slot, for a
// group) from its holder behind its back, now: an operator deleted it,
// or the store ended the holder's session early (memory.Backend's Delete
// and Expire). Until the holder hears of it, its term is still in force
// by its own deadline while another may begin: Check excuses a term that
// began after a tamper while the one before it was in force, if that one
// ended within Late of the new one's start. Writes are held to the same
// rules as ever: the old holder's writes after the new term's first are
// a stale leader's, which a fence refuses.
func (r *Recorder) Tampered(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	r.tampers = append(r.tampers, write{name: name, seq: r.seq, at: time.Now()})
}

// excused reports whether prev and t, terms of one lock in force at
// once, overlapped only as a tamper between their starts allows.
func (r *Recorder) excused(prev, t *recorded) bool {
	if prev.ended == 0 || prev.to.Sub(t.from) > Late {
		return false
	}
	return slices.ContainsFunc(r.tampers, func(w write) bool {
		return w.name == t.name && w.seq > prev.began && w.seq < t.began
	})
}

// Check returns nil if the history so far keeps every rule, else an
// error that lists each violation with the terms around it. Terms still
// in force are checked as far as they went.
func (r *Recorder) Check() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	byLock := map[string][]*recorded{}
	for _, t := range r.terms {
		k := lockKey(t.name, t.slot)
		byLock[k] = append(byLock[k], t)
	}
	for _, k := range slices.Sorted(maps.Keys(byLock)) {
		ts := byLock[k]
		for i, t := range ts {
			if t.ended != 0 && t.to.After(t.deadline.Add(Late)) {
				errs = append(errs, fmt.Errorf("%s: %s's term (token %d) ended at %s, %v after its deadline:\n%s",
					k, t.holder, t.token, r.at(t.to), t.to.Sub(t.deadline), r.around(ts, i)))
			}
			if i == 0 {
				continue
			}
			prev := ts[i-1]
			if (prev.ended == 0 || prev.ended > t.began) && !r.excused(prev, t) {
				errs = append(errs, fmt.Errorf("%s: two terms in force at once: %s (token %d) began at %s before %s's (token %d) ended:\n%s",
					k, t.holder, t.token, r.at(t.from), prev.holder, prev.token, r.around(ts, i)))
			}
			if t.token < prev.token || (t.token == prev.token && t.holder != prev.holder) {
				errs = append(errs, fmt.Errorf("%s: token %d of %s's term is not above %d of %s's before it:\n%s",
					k, t.token, t.holder, prev.token, prev.holder, r.around(ts, i)))
			}
		}
	}
	last := map[string]events.Token{}
	for _, w := range r.writes {
		if prev, ok := last[w.name]; ok && w.token < prev {
			errs = append(errs, fmt.Errorf("%s: a write under token %d at %s after one under %d: a stale leader's write, which a fence refuses",
				w.name, w.token, r.at(w.at), prev))
		}
		last[w.name] = max(last[w.name], w.token)
		if r.inForce(w) {
			continue
		}
		var of []*recorded
		for _, t := range r.terms {
			if t.name == w.name {
				of = append(of, t)
			}
		}
		i := slices.IndexFunc(of, func(t *recorded) bool { return t.token == w.token })
		if i < 0 {
			errs = append(errs, fmt.Errorf("%s: a write under token %d at %s, which no term of %s had:\n%s",
				w.name, w.token, r.at(w.at), w.name, r.around(of, len(of)-1)))
			continue
		}
		t := of[i]
		when := "before its term began"
		if t.ended != 0 && w.seq > t.ended {
			when = fmt.Sprintf("%v after its term ended", w.at.Sub(t.to))
		}
		errs = append(errs, fmt.Errorf("%s: %s's write under token %d at %s, %s:\n%s",
			w.name, t.holder, w.token, r.at(w.at), when, r.around(of, i)))
	}
	return errors.Join(errs...)
}

// inForce reports whether a term of w's lock under w's token was in
// force when w was recorded.
func (r *Recorder) inForce(w write) bool {
	for _, t := range r.terms {
		if t.name == w.name && t.token == w.token && t.began < w.seq && (t.ended == 0 || w.seq < t.ended) {
			return true
		}
	}
	return false
}

// around describes the terms of one lock next to ts[i].
func (r *Recorder) around(ts []*recorded, i int) string {
	var b strings.Builder
	for j := max(i-2, 0); j < len(ts) && j <= i+2; j++ {
		t := ts[j]
		kind := "term"
		if t.run {
			kind = "run "
		}
		to := "in force"
		if t.ended != 0 {
			to = "to " + r.at(t.to)
		}
		fmt.Fprintf(&b, "\t%s %-12s token %-6d from %s %s (deadline %s)\n", kind, t.holder, t.token, r.at(t.from), to, r.at(t.deadline))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// at prints t as the time since the Recorder was made.
func (r *Recorder) at(t time.Time) string {
	return "+" + t.Sub(r.start).Round(time.Microsecond).String()
}

func lockKey(name string, slot int) string {
	if slot == 0 {
		return name
	}
	return fmt.Sprintf("%s[%d]", name, slot)
}

// begin records the start of a term.
func (r *Recorder) begin(t *recorded) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	t.began, t.from = r.seq, time.Now()
	r.terms = append(r.terms, t) // in the order they began
}

// end records the end of a term.
func (r *Recorder) end(t *recorded, deadline time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	t.ended, t.to, t.deadline = r.seq, time.Now(), deadline
}

// recorderHook hears the engine for a Recorder.
type recorderHook struct {
	elector.NopHook
	r *Recorder
}

func (h recorderHook) Run(_ context.Context, name, _, id string) elector.RunHook {
	return &recorderRun{r: h.r, name: name, id: id}
}

func (h recorderHook) Term(_ context.Context, e events.Event, _ string, _ time.Duration, _ elector.Hooks, _ func() time.Time) elector.TermHook {
	t := &recorded{name: e.Name, slot: e.Slot, holder: e.Holder, token: e.Token, deadline: e.Deadline}
	h.r.begin(t)
	return recorderTerm{r: h.r, t: t}
}

// recorderTerm ends a campaign's term.
type recorderTerm struct {
	r *Recorder
	t *recorded
}

func (recorderTerm) Context(ctx context.Context) context.Context { return ctx }
func (recorderTerm) Work() func()                                { return func() {} }
func (t recorderTerm) Ended(e events.Event)                      { t.r.end(t.t, e.Deadline) }

// recorderRun records a one-shot run's time under its lock: from the
// start of its function to its return.
type recorderRun struct {
	r        *Recorder
	name, id string
}

func (*recorderRun) Context(ctx context.Context) context.Context { return ctx }
func (*recorderRun) Ended(string, error)                         {}

func (u *recorderRun) Work(slot int, token events.Token, deadline time.Time) func() {
	if token == 0 {
		return func() {} // run without the lock (WithFailOpen): no term
	}
	t := &recorded{name: u.name, slot: slot, holder: u.id, token: token, run: true, deadline: deadline}
	u.r.begin(t)
	return func() { u.r.end(t, deadline) }
}
