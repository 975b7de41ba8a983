package redis_test

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

// candidate is one campaign running in the test, with every event it
// published recorded by a reader goroutine. Both goroutines are waited for
// when the test ends.
type candidate struct {
	id   string
	c    *campaign.Campaign
	done chan error // Run's result

	mu     sync.Mutex
	events []events.Event
	next   int           // the next event expect returns
	more   chan struct{} // signalled (buffer 1) on each event
	read   chan struct{} // closed when the reader is done
}

// campaignOn starts a campaign for id on the lock name of b.
func campaignOn(t *testing.T, b backends.Backend, id, name string, opts ...campaign.Option) *candidate {
	t.Helper()
	opts = append([]campaign.Option{campaign.WithID(id)}, opts...)
	c, err := campaign.New(b, name, opts...)
	if err != nil {
		t.Fatalf("campaign.New(%s): %v", id, err)
	}
	k := &candidate{id: id, c: c, done: make(chan error, 1), more: make(chan struct{}, 1), read: make(chan struct{})}
	go func() { k.done <- c.Run(context.Background()) }()
	go k.record()
	t.Cleanup(k.stop)
	return k
}

func (k *candidate) record() {
	defer close(k.read)
	for e := range k.c.Events() {
		k.mu.Lock()
		k.events = append(k.events, e)
		k.mu.Unlock()
		select {
		case k.more <- struct{}{}:
		default:
		}
	}
}

// stop closes the campaign and waits for its goroutines. Calling it again
// does nothing.
func (k *candidate) stop() {
	_ = k.c.Close()
	<-k.read
	select {
	case <-k.done:
	default:
	}
}

// expect returns the next event, failing the test unless it comes within
// d and is of kind.
func (k *candidate) expect(t *testing.T, kind events.Kind, d time.Duration) events.Event {
	t.Helper()
	timeout := time.After(d)
	for {
		k.mu.Lock()
		if k.next < len(k.events) {
			e := k.events[k.next]
			k.next++
			k.mu.Unlock()
			if e.Kind != kind {
				t.Fatalf("%s: got %s, want %s", k.id, e, kind)
			}
			return e
		}
		k.mu.Unlock()
		select {
		case <-k.more:
		case <-timeout:
			t.Fatalf("%s: no %s event within %v", k.id, kind, d)
		}
	}
}

// quiet fails the test if k publishes anything within d.
func (k *candidate) quiet(t *testing.T, d time.Duration) {
	t.Helper()
	time.Sleep(d)
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.next < len(k.events) {
		t.Fatalf("%s: unexpected events %v", k.id, k.events[k.next:])
	}
}

// recorded returns every event k published so far.
func (k *candidate) recorded() []events.Event {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.events)
}

// checkTerms fails the test unless every term of each candidate is
// revoked before the same candidate's next one, and the fencing tokens
// increase.
func checkTerms(t *testing.T, ks ...*candidate) {
	t.Helper()
	var elected []events.Event
	for _, k := range ks {
		var open *events.Event
		for _, e := range k.recorded() {
			switch e.Kind {
			case events.Elected:
				if open != nil {
					t.Errorf("%s: %s before the Revoked of token %d", k.id, e, open.Token)
				}
				elected = append(elected, e)
				open = &e
			case events.Revoked:
				if open == nil || open.Token != e.Token {
					t.Errorf("%s: %s without its Elected", k.id, e)
				}
				open = nil
			}
		}
	}
	checkTokens(t, elected)
}

// checkTokens fails the test unless the tokens of the Elected events, in
// the order they were published, strictly increase.
func checkTokens(t *testing.T, elected []events.Event) {
	t.Helper()
	elected = slices.Clone(elected)
	slices.SortFunc(elected, func(a, b events.Event) int { return a.Time.Compare(b.Time) })
	for i := 1; i < len(elected); i++ {
		if elected[i].Token <= elected[i-1].Token {
			t.Errorf("fencing token went backwards: %s after %s", elected[i], elected[i-1])
		}
	}
}

// electedEvents returns the Elected events k published.
func electedEvents(k *candidate) []events.Event {
	var out []events.Event
	for _, e := range k.recorded() {
		if e.Kind == events.Elected {
			out = append(out, e)
		}
	}
	return out
}
