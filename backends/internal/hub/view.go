package hub

import (
	"context"
	"iter"
	"time"
)

// View is the Hub's state during With; it must not be kept after.
type View[S any] struct{ h *Hub[S] }

// State returns name's state, or nil if name is not in the Hub.
func (v View[S]) State(name string) *S {
	if e := v.h.names[name]; e != nil {
		return &e.state
	}
	return nil
}

// All yields every name in the Hub with its state.
func (v View[S]) All() iter.Seq2[string, *S] {
	return func(yield func(string, *S) bool) {
		for name, e := range v.h.names {
			if !yield(name, &e.state) {
				return
			}
		}
	}
}

// Signal wakes every watch of name.
func (v View[S]) Signal(name string) { v.SignalKinds(name, AllKinds) }

// SignalKinds wakes the watches of name that asked for a kind in k
// (WatchOnly).
func (v View[S]) SignalKinds(name string, k Kinds) {
	if e := v.h.names[name]; e != nil {
		e.signal(k)
	}
}

// Keepers yields the run's keepers (Keep).
func (v View[S]) Keepers() iter.Seq[any] {
	return func(yield func(any) bool) {
		for k := range v.h.keep {
			if !yield(k) {
				return
			}
		}
	}
}

// signal wakes the watches of e that asked for a kind in k; a signal
// pending already absorbs it.
func (e *entry[S]) signal(k Kinds) {
	for w := range e.subs {
		if w.kinds&k == 0 {
			continue
		}
		select {
		case w.ch <- struct{}{}:
		default:
		}
	}
}

// With calls f with the Hub's lock held, if r is still the Hub's run,
// and reports whether it did.
func (h *Hub[S]) With(r *Run, f func(v View[S])) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r == nil || h.run != r {
		return false
	}
	f(View[S]{h})
	return true
}

// Signal wakes every watch of name in r.
func (h *Hub[S]) Signal(r *Run, name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e := h.names[name]; e != nil && h.run == r {
		e.signal(AllKinds)
	}
}

// SignalAll wakes every watch of r: changes may have been missed.
func (h *Hub[S]) SignalAll(r *Run) {
	h.With(r, func(v View[S]) {
		for _, e := range h.names {
			e.signal(AllKinds)
		}
	})
}

// Next returns the earliest time a name of r is due (Config.Due), and
// false if none is (or r is no longer the Hub's run, or there is no
// Config.Due).
func (h *Hub[S]) Next(r *Run) (next time.Time, ok bool) {
	if h.cfg.Due == nil {
		return next, false
	}
	h.With(r, func(View[S]) {
		for _, e := range h.names {
			if at, due := h.cfg.Due(&e.state); due && (!ok || at.Before(next)) {
				next, ok = at, true
			}
		}
	})
	return next, ok
}

// Due returns the names of r due at now (Config.Due).
func (h *Hub[S]) Due(r *Run, now time.Time) []string {
	var out []string
	if h.cfg.Due == nil {
		return nil
	}
	h.With(r, func(View[S]) {
		for name, e := range h.names {
			if at, due := h.cfg.Due(&e.state); due && !at.After(now) {
				out = append(out, name)
			}
		}
	})
	return out
}

// Current returns the Hub's run, or nil while none exists.
func (h *Hub[S]) Current() *Run {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.run
}

// Keep makes k a keeper of the current run (starting one if none
// exists), which then lives without watches until Unkeep(k) or until it
// breaks; a broken run forgets its keepers. It returns the run.
func (h *Hub[S]) Keep(k any) *Run {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.start(context.Background())
	h.keep[k] = struct{}{}
	return r
}

// Unkeep removes the keeper k, stopping the run if nothing else needs
// it; it returns the run it stopped (nil if none), whose Done a caller
// that must outlive the feed waits for.
func (h *Hub[S]) Unkeep(k any) (stopped *Run) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.run == nil {
		return nil
	}
	delete(h.keep, k)
	if len(h.names) == 0 && len(h.keep) == 0 {
		stopped = h.run
		h.stop()
	}
	return stopped
}

// Kept returns the current run if k keeps it and its feed is confirmed;
// nil otherwise.
func (h *Hub[S]) Kept(k any) *Run {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.run == nil || !h.run.OK() {
		return nil
	}
	if _, ok := h.keep[k]; !ok {
		return nil
	}
	return h.run
}
