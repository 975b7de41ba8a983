package fanout

import (
	"sync"

	"github.com/hustings/hustings/events"
)

// Feed holds a publisher's current state for subscribers that join at any
// time and read at their own pace, each through a Stream owned by its own
// goroutine (see Forward). The publisher never waits: Publish only records
// the state and wakes whoever is watching.
//
// The zero Feed is ready to use; it is safe for concurrent use.
type Feed struct {
	mu      sync.Mutex
	cur     events.Event
	has     bool
	revoked []events.Event // the last few events.Revoked events, newest last
	changed chan struct{}  // closed and replaced on every Publish and on Close
	closed  bool
}

// keepRevoked is how many recent events.Revoked events a Feed keeps, so that a
// subscriber that missed one still gets its real reason.
const keepRevoked = 8

// Publish records e as the current state. After Close it does nothing.
func (f *Feed) Publish(e events.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return
	}
	f.cur, f.has = e, true
	if e.Kind == events.Revoked {
		f.revoked = append(f.revoked, e)
		if len(f.revoked) > keepRevoked {
			f.revoked = f.revoked[1:]
		}
	}
	f.wake()
}

// Close marks the feed ended: subscribers receive what they are owed and
// their channels close. Calling it again does nothing.
func (f *Feed) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return
	}
	f.closed = true
	f.wake()
}

func (f *Feed) wake() {
	if f.changed != nil {
		close(f.changed)
	}
	f.changed = make(chan struct{})
}

// snapshot returns the current state, the events.Revoked events kept, whether the
// feed is closed, and a channel closed at the next change.
func (f *Feed) snapshot() (cur events.Event, has bool, revoked []events.Event, closed bool, changed <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.changed == nil {
		f.changed = make(chan struct{})
	}
	return f.cur, f.has, append([]events.Event(nil), f.revoked...), f.closed, f.changed
}

// Forward delivers the feed to s until the feed closes or done is closed,
// then closes s. It is the loop of the goroutine that owns s, and returns
// when that goroutine should end. The first event s offers is the current
// state, if it is worth telling.
func (f *Feed) Forward(s *Stream, done <-chan struct{}) {
	defer s.Close()
	for {
		cur, has, revoked, closed, changed := f.snapshot()
		if has {
			s.publish(cur, revoked)
		}
		if closed {
			return
		}
		for waiting := true; waiting; {
			ch, e := s.Ready()
			select {
			case <-done:
				return
			case <-changed:
				waiting = false
			case ch <- e:
				s.Sent()
			}
		}
	}
}
