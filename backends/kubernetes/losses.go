package kubernetes

import (
	coordv1 "k8s.io/api/coordination/v1"
	kwatch "k8s.io/apimachinery/pkg/watch"

	"github.com/hustings/hustings/backends/internal/hub"
	"github.com/hustings/hustings/events"
)

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
func (f *feed) listen(s *session) { f.h.Keep(s) }

// unlisten unregisters s, ending the run if nothing else needs it.
func (f *feed) unlisten(s *session) { f.h.Unkeep(s) }

// sawLock tells the listening sessions of a change of a lock Lease at
// the resourceVersion rv. A session granted the lock under token T
// loses it if, at a version after T (the version its acquiring update
// was conditioned on), the Lease is gone or records another term: every
// event after T is its own take or a later change. Events at T or
// before are older than the grant, and say nothing of it. It reports
// whether one of the sessions holds the lock. The hub's lock is held.
func (f *feed) sawLock(v hub.View[watched], typ kwatch.EventType, t term, rv events.Token) (held bool) {
	for k := range v.Keepers() {
		if s := k.(*session); typ == kwatch.Deleted || t.session != s.lease || t.hold > 0 {
			s.ledger.GoneAt(t.name, rv)
		} else {
			held = true
		}
	}
	return held
}

// sawList checks the listening sessions' grants against a LIST made at
// the resourceVersion listRV, by lock name: a lock granted under a token
// below listRV that the list does not hold was deleted after its take
// (the Lease existed, unchanged, from the version the take was
// conditioned on until the take). Those it holds were seen by sawLock.
// The hub's lock is held.
func (f *feed) sawList(v hub.View[watched], locks map[string]bool, listRV events.Token) {
	for k := range v.Keepers() {
		s := k.(*session)
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
func (f *feed) listening(s *session) *hub.Run { return f.h.Kept(s) }

// advance records that r has delivered every change up to the
// resourceVersion rv, for Run.Reached.
func advance(r *hub.Run, rv string) {
	if v, err := tokenOf(rv); err == nil {
		r.Advance(uint64(v))
	}
}
