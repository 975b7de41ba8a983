package backendtest

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
)

// Recorder runs one campaign for a backend's fault tests and records every
// event it publishes, in order. Its goroutines (Run and the reader) are
// waited for by Stop, which the test's cleanup calls. Safe for concurrent
// use.
type Recorder struct {
	ID string
	C  *campaign.Campaign

	wg   sync.WaitGroup
	mu   sync.Mutex
	seen []events.Event
	read int           // events already returned by Expect and WaitFor
	more chan struct{} // signalled (buffer 1) on each event
}

// Record starts a campaign for candidate id on the lock name of b.
func Record(t testing.TB, b backends.Backend, name, id string, opts ...campaign.Option) *Recorder {
	t.Helper()
	c, err := campaign.New(b, name, append([]campaign.Option{campaign.WithID(id)}, opts...)...)
	if err != nil {
		t.Fatalf("campaign.New(%s): %v", id, err)
	}
	r := &Recorder{ID: id, C: c, more: make(chan struct{}, 1)}
	r.wg.Go(func() { _ = c.Run(context.Background()) })
	r.wg.Go(func() {
		for e := range c.Events() {
			r.mu.Lock()
			r.seen = append(r.seen, e)
			r.mu.Unlock()
			select {
			case r.more <- struct{}{}:
			default:
			}
		}
	})
	t.Cleanup(r.Stop)
	return r
}

// Stop closes the campaign and waits for its goroutines. Calling it again
// does nothing.
func (r *Recorder) Stop() {
	_ = r.C.Close()
	r.wg.Wait()
}

// Events returns every event so far.
func (r *Recorder) Events() []events.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.seen)
}

// next returns the next event not yet returned, waiting up to d.
func (r *Recorder) next(d time.Duration) (events.Event, bool) {
	timeout := time.After(d)
	for {
		r.mu.Lock()
		if r.read < len(r.seen) {
			e := r.seen[r.read]
			r.read++
			r.mu.Unlock()
			return e, true
		}
		r.mu.Unlock()
		select {
		case <-r.more:
		case <-timeout:
			return events.Event{}, false
		}
	}
}

// Expect returns the next event, failing the test unless it comes within
// d and is of kind.
func (r *Recorder) Expect(t testing.TB, kind events.Kind, d time.Duration) events.Event {
	t.Helper()
	e, ok := r.next(d)
	switch {
	case !ok:
		t.Fatalf("%s: no %s event within %v", r.ID, kind, d)
	case e.Kind != kind:
		t.Fatalf("%s: got %s, want %s", r.ID, e, kind)
	}
	return e
}

// WaitFor returns the next event of kind, skipping others, failing the
// test if none comes within d.
func (r *Recorder) WaitFor(t testing.TB, kind events.Kind, d time.Duration) events.Event {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		e, ok := r.next(time.Until(deadline))
		if !ok {
			t.Fatalf("%s: no %s event within %v; events: %v", r.ID, kind, d, r.Events())
		}
		if e.Kind == kind {
			return e
		}
	}
}

// Quiet fails the test if the campaign publishes anything new within d.
func (r *Recorder) Quiet(t testing.TB, d time.Duration) {
	t.Helper()
	time.Sleep(d)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.read < len(r.seen) {
		t.Fatalf("%s: unexpected events %v", r.ID, r.seen[r.read:])
	}
}

// Count returns how many events of kind the campaign published.
func (r *Recorder) Count(kind events.Kind) int {
	n := 0
	for _, e := range r.Events() {
		if e.Kind == kind {
			n++
		}
	}
	return n
}

// Pending reports whether an event has come that Expect or WaitFor has
// not returned yet.
func (r *Recorder) Pending() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.read < len(r.seen)
}

// CheckPairs fails the test unless every term of each recorder is revoked
// before the same recorder's next one, and the fencing tokens of all
// their terms increase in the order they were elected. Unlike CheckTerms
// it allows terms of different recorders to overlap: for fault tests
// whose server forgets its locks (a restart without persistence).
func CheckPairs(t testing.TB, rs ...*Recorder) {
	t.Helper()
	var elected []events.Event
	for _, r := range rs {
		var open *events.Event
		for _, e := range r.Events() {
			switch e.Kind {
			case events.Elected:
				if open != nil {
					t.Errorf("%s: %s before the Revoked of token %d", r.ID, e, open.Token)
				}
				elected = append(elected, e)
				open = &e
			case events.Revoked:
				if open == nil || open.Token != e.Token {
					t.Errorf("%s: %s without its Elected", r.ID, e)
				}
				open = nil
			}
		}
	}
	CheckTokens(t, elected)
}

// CheckTokens fails the test unless the tokens of the Elected events, in
// the order they were published, strictly increase.
func CheckTokens(t testing.TB, elected []events.Event) {
	t.Helper()
	elected = slices.Clone(elected)
	slices.SortFunc(elected, func(a, b events.Event) int { return a.Time.Compare(b.Time) })
	for i := 1; i < len(elected); i++ {
		if elected[i].Token <= elected[i-1].Token {
			t.Errorf("fencing token went backwards: %s after %s", elected[i], elected[i-1])
		}
	}
}

// Elected returns the Elected events r published.
func (r *Recorder) Elected() []events.Event {
	var out []events.Event
	for _, e := range r.Events() {
		if e.Kind == events.Elected {
			out = append(out, e)
		}
	}
	return out
}
