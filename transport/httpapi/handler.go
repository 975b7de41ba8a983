package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"sync"

	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
)

// Source is what the Handler observes; a *campaign.Campaign (a group's
// too) satisfies it.
type Source interface {
	State() campaign.State
	Subscribe(ctx context.Context) <-chan events.Event
}

// Handler is a read-only http.Handler over the sources registered with it.
// The zero Handler is not ready to use; call New.
type Handler struct {
	mu      sync.Mutex
	sources []Source
	changed chan struct{} // signalled (buffer 1) by Register and Unregister, for Run; made by changedLocked
	hist    history       // what Run records
}

// New returns a Handler with no sources.
func New() *Handler { return &Handler{} }

// Register adds s to the handler, after those already there. Registering
// nil, or a source already registered, does nothing. s must be comparable
// (a pointer, as campaigns and groups are).
func (h *Handler) Register(s Source) {
	if s == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !slices.Contains(h.sources, s) {
		h.sources = append(h.sources, s)
	}
	h.signalLocked() // Run subscribes to it
}

// signalLocked tells Run the sources changed, unless it has a signal
// pending already; h.mu held.
func (h *Handler) signalLocked() {
	select {
	case h.changedLocked() <- struct{}{}:
	default:
	}
}

// changedLocked returns the channel Register and Unregister signal, made
// on first use so that a Handler not made by New does not leave Run
// waiting on a nil channel for sources registered after it started; h.mu
// held.
func (h *Handler) changedLocked() chan struct{} {
	if h.changed == nil {
		h.changed = make(chan struct{}, 1)
	}
	return h.changed
}

// Unregister removes s; streams already subscribed to it keep it until they
// end, Run lets it go. Removing a source not registered does nothing.
func (h *Handler) Unregister(s Source) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sources = slices.DeleteFunc(h.sources, func(x Source) bool { return x == s })
	h.signalLocked() // Run unsubscribes from it
}

func (h *Handler) registered() []Source {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.sources)
}

// ServeHTTP serves the routes listed in the package doc.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var serve func(http.ResponseWriter, *http.Request)
	switch r.URL.Path {
	case "/", "":
		w.Header().Set("Vary", "Accept")
		serve = h.serveSnapshot
		if wantsHTML(r) {
			serve = h.servePage
		}
	case "/campaigns":
		serve = h.serveSnapshot
	case "/events":
		serve = h.serveEvents
	case "/history":
		serve = h.serveHistory
	default:
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "httpapi: read-only: decide to run through the lock, not from this view", http.StatusMethodNotAllowed)
		return
	}
	serve(w, r)
}

func (h *Handler) serveSnapshot(w http.ResponseWriter, _ *http.Request) {
	sources := h.registered()
	snaps := make([]snapshot, 0, len(sources))
	for _, s := range sources {
		snaps = append(snaps, newSnapshot(s.State()))
	}
	writeJSON(w, snaps)
}

// writeJSON writes v as the JSON body of a response that is not to be
// cached: it is stale the moment it is sent.
func writeJSON(w http.ResponseWriter, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "httpapi: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(append(body, '\n'))
}
