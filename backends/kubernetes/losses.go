package kubernetes

import (
	"context"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	kwatch "k8s.io/apimachinery/pkg/watch"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
)

var _ backends.LossNotifier = (*session)(nil)

// Losses returns the channel that signals when Lost gains a lock. The
// first call registers the session with the Backend's watch (starting
// it if no Watch has), which then reports a lock of the session deleted
// or rewritten behind its back within milliseconds, without a
// KeepAlive; Close unregisters it. If the watch breaks, KeepAlive
// registers the session again. The same channel on every call, never
// closed; it does not block.
func (s *session) Losses() <-chan struct{} {
	s.mu.Lock()
	s.listening = true
	s.mu.Unlock()
	s.relisten()
	return s.ledger.Losses()
}

// relisten registers the session with the watch (again, if the watch
// that fed it broke) if it wants losses pushed and is not closed. It
// holds s.mu throughout, so that Close, which sets closed before it
// unregisters, cannot be overtaken: a registration after Close's would
// keep the watch running for a closed session.
func (s *session) relisten() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listening && !s.closed {
		s.b.hub.listen(s) // takes h.mu, which is never held while taking s.mu
	}
}

// listen registers s for its losses, starting a run if none exists.
func (h *hub) listen(s *session) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.start(context.Background())
	h.listeners[s] = struct{}{}
}

// unlisten unregisters s, ending the run if nothing else needs it.
func (h *hub) unlisten(s *session) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.run == nil {
		return
	}
	delete(h.listeners, s)
	h.stopIfIdle()
}

// sawLock tells the listening sessions of a change of a lock Lease at
// the resourceVersion rv. A session granted the lock under token T
// loses it if, at a version after T (the version its acquiring update
// was conditioned on), the Lease is gone or records another term: every
// event after T is its own take or a later change. Events at T or
// before are older than the grant, and say nothing of it. h.mu is held.
func (h *hub) sawLock(typ kwatch.EventType, t term, rv events.Token) {
	for s := range h.listeners {
		if typ == kwatch.Deleted || t.session != s.lease || t.hold > 0 {
			s.ledger.GoneAt(t.name, rv)
		}
	}
}

// sawList checks the listening sessions' grants against a LIST made at
// the resourceVersion listRV, by lock name: a lock granted under a token
// below listRV that the list does not hold was deleted after its take
// (the Lease existed, unchanged, from the version the take was
// conditioned on until the take). Those it holds were seen by sawLock.
// h.mu is held.
func (h *hub) sawList(locks map[string]bool, listRV events.Token) {
	for s := range h.listeners {
		for name, tok := range s.ledger.Held() {
			if !locks[name] && tok < listRV {
				s.ledger.Gone(name, tok)
			}
		}
	}
}

// lockNames returns the names of the lock Leases in items.
func lockNames(items []coordv1.Lease) map[string]bool {
	out := map[string]bool{}
	for i := range items {
		if items[i].Labels[labelKind] == kindLock {
			out[items[i].Annotations[annName]] = true
		}
	}
	return out
}

// listening returns the hub's run if s is registered with it for its
// losses and the run has made its first LIST; else nil.
func (h *hub) listening(s *session) *run {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.run
	if r == nil {
		return nil
	}
	if _, ok := h.listeners[s]; !ok {
		return nil
	}
	select {
	case <-r.ready:
		if r.err != nil {
			return nil
		}
		return r
	default:
		return nil
	}
}

// reached reports whether r, still the hub's run, has delivered every
// change up to the resourceVersion rv, waiting for it at most limit, and
// while ctx lasts.
func (h *hub) reached(ctx context.Context, r *run, rv events.Token, limit time.Duration) bool {
	timer := time.NewTimer(limit)
	defer timer.Stop()
	for {
		h.mu.Lock()
		if h.run != r {
			h.mu.Unlock()
			return false
		}
		if r.seen >= rv {
			h.mu.Unlock()
			return true
		}
		if r.advanced == nil {
			r.advanced = make(chan struct{})
		}
		advanced := r.advanced
		h.mu.Unlock()
		select {
		case <-advanced:
		case <-r.ctx.Done():
			return false
		case <-ctx.Done():
			return false
		case <-timer.C:
			return false
		}
	}
}

// advance records that r has delivered every change up to the
// resourceVersion rv, and wakes reached.
func (h *hub) advance(r *run, rv string) {
	v, err := tokenOf(rv)
	if err != nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.run != r || v <= r.seen {
		return
	}
	r.seen = v
	if r.advanced != nil {
		close(r.advanced)
		r.advanced = nil
	}
}
