package ops

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/elector"
)

// Health tells whether the campaigns given WithHealth are stuck: Check
// (and ServeHTTP, for /healthz) fails when
//
//   - work bound to a term (WhileLeader's function, work holding
//     Campaign.Term, a RunIfLeader or Every function) is still running
//     more than the grace after its term ended: its revocation, or its
//     deadline if that came first (a one-shot run's term is its lease);
//   - a campaign still believes it leads more than the grace past its
//     term's deadline;
//   - keep-alives of the session of a campaign that believes it leads
//     have failed for longer than the TTL.
//
// It passes for followers, for leaders whose session renews, and for
// work that returns within the grace of its term's end. A campaign
// revokes its term at the deadline by itself; what Health catches is
// what the campaign cannot stop: work that ignores its context, and a
// process too starved to run its timers. The grace should cover how long
// work takes to notice its context ended, and be at least WithGrace
// (how long a graceful stop waits for the work) if you resign on purpose.
type Health struct {
	grace time.Duration
	mu    sync.Mutex
	terms map[*healthTerm]struct{} // in force, or ended with work still running
	runs  map[*healthRun]struct{}  // one-shot functions running
}

// NewHealth returns a Health that allows work grace past its term's end;
// grace must be ≥ 0, else the error matches campaign.ErrInvalid.
func NewHealth(grace time.Duration) (*Health, error) {
	if grace < 0 {
		return nil, fmt.Errorf("%w: ops: health grace %v must be ≥ 0", campaign.ErrInvalid, grace)
	}
	return &Health{grace: grace, terms: map[*healthTerm]struct{}{}, runs: map[*healthRun]struct{}{}}, nil
}

// WithHealth makes a campaign, group, session, RunIfLeader or Every
// report its terms, work and keep-alives to h. Default: none.
func WithHealth(h *Health) campaign.Option {
	return elector.Opt("ops.WithHealth", uses, func(c *elector.Config) {
		if h == nil {
			c.Reject(errors.New("ops: nil Health"))
			return
		}
		c.Hooks = append(c.Hooks, &healthHook{h: h})
	})
}

// Check returns nil when no campaign reported to h is stuck, else an
// error matching ErrUnhealthy that lists each stuck one; ctx's error if
// ctx has ended. It does not block.
func (h *Health) Check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	now := time.Now()
	h.mu.Lock()
	var found []string
	for t := range h.terms {
		found = append(found, h.stuckTerm(t, now)...)
	}
	for r := range h.runs {
		if over := now.Sub(r.deadline); over > h.grace {
			found = append(found, fmt.Sprintf("the work of a one-shot run of %q (token %d) outlived its lease by %v (grace %v)", r.name, r.token, over.Round(time.Millisecond), h.grace))
		}
	}
	h.mu.Unlock()
	if len(found) == 0 {
		return nil
	}
	slices.Sort(found) // one order for one state, whatever the maps did
	errs := make([]error, len(found))
	for i, f := range found {
		errs[i] = fmt.Errorf("%w: %s", ErrUnhealthy, f)
	}
	return errors.Join(errs...)
}

// stuckTerm says what is wrong with t at now, if anything; h.mu held.
func (h *Health) stuckTerm(t *healthTerm, now time.Time) []string {
	var found []string
	deadline := t.deadline()
	end := deadline
	if !t.ended.IsZero() && t.ended.Before(end) {
		end = t.ended
	}
	if over := now.Sub(end); t.work > 0 && over > h.grace {
		found = append(found, fmt.Sprintf("the work of term %d of %s outlived the term by %v (grace %v)", t.token, t.lock(), over.Round(time.Millisecond), h.grace))
	}
	if !t.ended.IsZero() {
		return found
	}
	if over := now.Sub(deadline); over > h.grace {
		found = append(found, fmt.Sprintf("term %d of %s is believed in force %v past its deadline (grace %v)", t.token, t.lock(), over.Round(time.Millisecond), h.grace))
	}
	if since := t.on.failingSince(); !since.IsZero() && now.Sub(since) > t.ttl {
		found = append(found, fmt.Sprintf("keep-alives of %s on %s have failed for %v, longer than the TTL %v, while it leads %s", t.id, t.backend, now.Sub(since).Round(time.Millisecond), t.ttl, t.lock()))
	}
	return found
}

// ServeHTTP answers a probe: 200 and "ok" when Check passes, 503 and
// Check's error otherwise.
func (h *Health) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := h.Check(r.Context()); err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, err)
		return
	}
	fmt.Fprintln(w, "ok")
}

// healthHook feeds a Health from the engine. The hook of a session's
// Config hears its keep-alives; the terms on the session read them there.
type healthHook struct {
	h       *Health
	failing time.Time // since when the session's keep-alives fail; zero while they succeed; h.mu
}

// failingSince returns since when k's session's keep-alives fail, zero
// if they do not or k is nil; h.mu held.
func (k *healthHook) failingSince() time.Time {
	if k == nil {
		return time.Time{}
	}
	return k.failing
}

func (*healthHook) Campaign(string, string)            {}
func (*healthHook) Try(string, string, elector.Reason) {}

func (k *healthHook) Term(_ context.Context, e events.Event, backend string, ttl time.Duration, session elector.Hooks, deadline func() time.Time) elector.TermHook {
	t := &healthTerm{h: k.h, name: e.Name, slot: e.Slot, token: e.Token, id: e.Holder, backend: backend, ttl: ttl, deadline: deadline, on: k.h.hookOf(session)}
	k.h.mu.Lock()
	k.h.terms[t] = struct{}{}
	k.h.mu.Unlock()
	return t
}

// hookOf returns h's hook among a session's hooks, or nil.
func (h *Health) hookOf(session elector.Hooks) *healthHook {
	for _, s := range session {
		if k, ok := s.(*healthHook); ok && k.h == h {
			return k
		}
	}
	return nil
}

func (k *healthHook) KeepAlive(_ string, _ time.Duration, err error) {
	k.h.mu.Lock()
	defer k.h.mu.Unlock()
	switch {
	case err == nil:
		k.failing = time.Time{}
	case k.failing.IsZero():
		k.failing = time.Now()
	}
}

func (k *healthHook) Run(_ context.Context, name, _, _ string) elector.RunHook {
	return healthRunHook{k.h, name}
}
