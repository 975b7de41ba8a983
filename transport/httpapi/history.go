package httpapi

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/hustings/hustings/events"
)

// What Run keeps for GET /history: the events of the last historyWindow,
// at most historyMax of them (the oldest go first).
const (
	historyWindow = 5 * time.Minute
	historyMax    = 4096
)

// history is what Run records: events in the order they were received,
// none twice (a new subscription first repeats the current state).
type history struct {
	mu     sync.Mutex
	events []events.Event
	seen   map[eventKey]bool // the keys of events
}

type eventKey struct {
	kind   events.Kind
	name   string
	slot   int
	token  events.Token
	holder string
}

func keyOf(e events.Event) eventKey { return eventKey{e.Kind, e.Name, e.Slot, e.Token, e.Holder} }

func (hs *history) add(e events.Event) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	hs.pruneLocked(time.Now())
	if hs.seen[keyOf(e)] {
		return
	}
	if len(hs.events) == historyMax {
		hs.dropLocked(1)
	}
	if hs.seen == nil {
		hs.seen = map[eventKey]bool{}
	}
	hs.seen[keyOf(e)] = true
	hs.events = append(hs.events, e)
}

func (hs *history) recent() []events.Event {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	hs.pruneLocked(time.Now())
	return slices.Clone(hs.events)
}

// pruneLocked drops events older than the window; hs.mu held.
func (hs *history) pruneLocked(now time.Time) {
	i := slices.IndexFunc(hs.events, func(e events.Event) bool { return now.Sub(e.Time) <= historyWindow })
	if i < 0 {
		i = len(hs.events)
	}
	hs.dropLocked(i)
}

// dropLocked drops the n oldest events; hs.mu held.
func (hs *history) dropLocked(n int) {
	for _, e := range hs.events[:n] {
		delete(hs.seen, keyOf(e))
	}
	hs.events = slices.Delete(hs.events, 0, n)
}

// Run records the events of every source registered with h, those
// registered while it runs included, for GET /history (which the live page
// reads when it opens, to show the last minutes rather than only what
// happens once it is open); a source unregistered is let go. It blocks
// until ctx ends, waits for the goroutines it started (one per source),
// and returns ctx.Err(). Without Run, GET /history is empty. Run it once
// per Handler: a second Run at the same time records nothing the first
// does not.
func (h *Handler) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	h.mu.Lock()
	changed := h.changedLocked()
	h.mu.Unlock()
	subscribed := map[Source]context.CancelFunc{}
	for {
		now := map[Source]bool{}
		for _, s := range h.registered() {
			now[s] = true
		}
		for s, unsubscribe := range subscribed {
			if !now[s] {
				unsubscribe()
				delete(subscribed, s)
			}
		}
		for s := range now {
			if subscribed[s] != nil {
				continue
			}
			sctx, unsubscribe := context.WithCancel(ctx)
			subscribed[s] = unsubscribe
			sub := s.Subscribe(sctx)
			wg.Go(func() {
				for e := range received(sctx, sub) {
					h.hist.add(e)
				}
			})
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}

func (h *Handler) serveHistory(w http.ResponseWriter, _ *http.Request) {
	recent := h.hist.recent()
	out := make([]event, 0, len(recent))
	for _, e := range recent {
		out = append(out, newEvent(e))
	}
	writeJSON(w, out)
}
