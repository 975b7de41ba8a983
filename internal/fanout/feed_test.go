package fanout

import (
	"github.com/hustings/hustings/events"
	"sync"
	"testing"
)

// forward runs f.Forward for a new stream in a goroutine and returns the
// stream and a func that stops it and waits.
func forward(f *Feed) (*Stream, func()) {
	s := NewStream()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { f.Forward(s, done) })
	return s, func() { close(done); wg.Wait() }
}

func TestFeedLateSubscriberGetsCurrentState(t *testing.T) {
	var f Feed
	f.Publish(elected(1))
	f.Publish(revoked(1))
	f.Publish(elected(2))
	s, stop := forward(&f)
	defer stop()
	if e := <-s.C(); e.Kind != events.Elected || e.Token != 2 {
		t.Fatalf("late subscriber first got %s, want elected(2)", e)
	}
}

func TestFeedSubscriberAfterRevocationGetsNothing(t *testing.T) {
	var f Feed
	f.Publish(elected(1))
	f.Publish(revoked(1))
	s, stop := forward(&f)
	f.Close()
	for e := range s.C() {
		t.Fatalf("got %s for a term that ended before subscribing", e)
	}
	stop()
}

func TestFeedCloseDeliversOwedRevokedThenCloses(t *testing.T) {
	var f Feed
	f.Publish(elected(1))
	s, stop := forward(&f)
	defer stop()
	if e := <-s.C(); e.Kind != events.Elected {
		t.Fatalf("got %s, want elected(1)", e)
	}
	r := revoked(1)
	f.Publish(r)
	f.Publish(elected(2))
	f.Publish(revoked(2))
	f.Close()
	var got []events.Event
	for e := range s.C() {
		got = append(got, e)
	}
	if len(got) == 0 || got[0].Kind != events.Revoked || got[0].Token != 1 || got[0].Reason != r.Reason {
		t.Fatalf("after close got %s, want revoked(1) with its own reason first", kinds(got))
	}
	checkPairing(t, append([]events.Event{elected(1)}, got...))
}

func TestFeedConcurrentSubscribers(t *testing.T) {
	var f Feed
	var wg sync.WaitGroup
	results := make([][]events.Event, 4)
	for i := range results {
		s, _ := forward(&f) // ends when the feed closes
		wg.Go(func() {
			for e := range s.C() {
				results[i] = append(results[i], e)
			}
		})
	}
	const terms = 3000
	for tok := events.Token(1); tok <= terms; tok++ {
		f.Publish(elected(tok))
		f.Publish(revoked(tok))
	}
	f.Close()
	wg.Wait()
	for _, got := range results {
		checkPairing(t, got)
		if len(got)%2 != 0 {
			t.Fatalf("a subscriber was left with a term open: %d events", len(got))
		}
	}
}
