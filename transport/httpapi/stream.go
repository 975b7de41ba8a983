package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"sync"
	"time"

	"github.com/hustings/hustings/events"
)

// serveEvents streams the events of every registered source until the client
// goes, a write fails, or every subscription has closed.
func (h *Handler) serveEvents(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	// Headers go out now, so that a client sees the stream start even
	// while no source has anything to say.
	if err := rc.Flush(); err != nil {
		http.Error(w, "httpapi: streaming not supported", http.StatusInternalServerError)
		return
	}
	// A server's WriteTimeout would cut the stream: it has no end in sight.
	_ = rc.SetWriteDeadline(time.Time{})

	ctx, cancel := context.WithCancel(r.Context())
	merged, wait := fanIn(ctx, h.registered())
	defer func() { cancel(); wait() }()
	for e := range merged {
		if err := writeEvent(w, e); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
}

// fanIn subscribes to every source and forwards their events to one
// unbuffered channel, so each goroutine holds at most one event and a slow
// reader gets the sources' latest state rather than a backlog. The channel
// closes when every subscription has. The goroutines (one per source, and
// one that closes the channel after them) end with ctx or with their
// subscriptions; wait waits for all of them.
func fanIn(ctx context.Context, sources []Source) (<-chan events.Event, func()) {
	out := make(chan events.Event)
	var wg sync.WaitGroup
	for _, s := range sources {
		sub := s.Subscribe(ctx)
		wg.Go(func() { forward(ctx, sub, out) })
	}
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		wg.Wait()
		close(out)
	}()
	return out, func() { <-closed }
}

// forward copies in to out until in closes or ctx ends.
func forward(ctx context.Context, in <-chan events.Event, out chan<- events.Event) {
	for e := range received(ctx, in) {
		select {
		case out <- e:
		case <-ctx.Done():
			return
		}
	}
}

// received yields what in receives until in closes or ctx ends; it does
// not rely on the source to close in when ctx ends.
func received(ctx context.Context, in <-chan events.Event) iter.Seq[events.Event] {
	return func(yield func(events.Event) bool) {
		for {
			select {
			case e, ok := <-in:
				if !ok || !yield(e) {
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}
}

func writeEvent(w http.ResponseWriter, e events.Event) error {
	data, err := json.Marshal(newEvent(e))
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", e.Kind, data)
	return err
}
