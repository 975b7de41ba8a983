package fanout

import (
	"sync/atomic"

	"github.com/hustings/hustings/events"
)

// Stream is one subscriber's channel of events, fed by a single owner (a
// campaign's actor, under its lock, or an observer's loop) that must never
// block on it.
//
// The owner calls Publish whenever the state changes, and offers the next
// event when it can: a loop in its select, an actor at its next callback
// (it polls while an event waits, see elector's flushEvents):
//
//	ch, e := s.Ready()
//	select {
//	case ch <- e: // ch is nil when there is nothing to send
//		s.Sent()
//	case <-timer.C:
//		...
//	}
//
// Delivery compares the state the subscriber last received with the current
// state, instead of queueing every event: a subscriber that reads slowly
// sees fewer events, never events out of order, and one that received
// events.Elected for term t always receives events.Revoked for term t before any later
// events.Elected. Events replaced before the subscriber received them are counted
// as dropped.
//
// The channel has a buffer of one, so the final events.Revoked can be left in it
// when the owner closes the stream. Only the owner may call Publish, Ready,
// Sent and Close; C and Dropped are safe from any goroutine.
type Stream struct {
	ch         chan events.Event
	current    events.Event
	has        bool         // current holds a published event
	delivered  events.Event // the last event known to be received
	inFlight   events.Event // the event in the buffer, if busy
	busy       bool
	owed       events.Event // the events.Revoked for the delivered term, once published
	closed     bool
	curDropped bool // current was counted as dropped when it was published
	dropped    atomic.Uint64
}

// NewStream returns a stream with nothing published.
func NewStream() *Stream {
	return &Stream{ch: make(chan events.Event, 1)}
}

// C returns the receive-only channel; the same channel on every call. The
// owner closes it with Close.
func (s *Stream) C() <-chan events.Event { return s.ch }

// Dropped returns how many published events the subscriber will never
// receive: those newer state replaced before it read them, and the
// events.Revoked of terms whose events.Elected it never received.
func (s *Stream) Dropped() uint64 { return s.dropped.Load() }

// Publish makes e the current state. It takes back an event still unread in
// the buffer, so that Ready offers what leads to e.
func (s *Stream) Publish(e events.Event) { s.publish(e, nil) }

// publish makes e the current state. history holds recent events.Revoked events
// the owner may have skipped (a Feed's subscriber sees only snapshots), so
// that the one owed to the subscriber keeps its reason.
func (s *Stream) publish(e events.Event, history []events.Event) {
	if s.closed {
		return
	}
	prev, had, prevDropped := s.current, s.has, s.curDropped
	s.current, s.has, s.curDropped = e, true, false
	s.settle()
	if had && !prevDropped && !sameState(prev, s.delivered) && !sameState(prev, s.owed) {
		s.dropped.Add(1) // replaced before the subscriber received it
	}
	knownTerm := s.delivered.Kind == events.Elected
	if knownTerm {
		for _, r := range history {
			if r.Kind == events.Revoked && sameTerm(r, s.delivered) {
				s.owed = r
			}
		}
	}
	if e.Kind == events.Revoked && knownTerm && sameTerm(e, s.delivered) {
		s.owed = e
	}
	if e.Kind == events.Revoked && !(knownTerm && sameTerm(e, s.delivered)) {
		// The end of a term the subscriber never saw begin: it will never
		// be sent, so it is dropped now, and not again when replaced.
		s.dropped.Add(1)
		s.curDropped = true
	}
	if knownTerm {
		s.offer()
	}
}

// offer puts the next event in the buffer if it is free, so that a reader
// gets news even while the owner is busy elsewhere (a graceful stop waiting
// for work); it never blocks.
func (s *Stream) offer() {
	ch, e := s.Ready()
	if ch == nil {
		return
	}
	select {
	case ch <- e:
		s.Sent()
	default:
	}
}

// Ready returns the channel and the event to offer next, or a nil channel
// (which blocks forever in a select) when the subscriber is up to date.
func (s *Stream) Ready() (chan<- events.Event, events.Event) {
	if s.closed {
		return nil, events.Event{}
	}
	last := s.delivered
	if s.busy {
		// A send can only go through once the subscriber took the buffered
		// event, so offer what follows it.
		last = s.inFlight
	}
	e, ok := s.next(last)
	if !ok {
		return nil, events.Event{}
	}
	return s.ch, e
}

// Sent records that the event returned by Ready went into the channel.
func (s *Stream) Sent() {
	last := s.delivered
	if s.busy {
		last = s.inFlight
		s.delivered = s.inFlight
	}
	s.inFlight, _ = s.next(last)
	s.busy = true
}

// Close settles the stream, leaves in the buffer the events.Revoked the subscriber
// is owed (if any), and closes the channel. Calling it again does nothing.
func (s *Stream) Close() {
	if s.closed {
		return
	}
	s.settle()
	if e, ok := s.next(s.delivered); ok {
		s.ch <- e // the buffer is empty after settle
	}
	s.closed = true
	close(s.ch)
}

// settle finds out whether the buffered event was received. With one slot
// and one sender there is no interleaving: either the subscriber took it or
// the receive below does.
func (s *Stream) settle() {
	if !s.busy {
		return
	}
	s.busy = false
	select {
	case <-s.ch:
	default:
		s.delivered = s.inFlight
	}
}

// next returns the event that brings a subscriber who last received last
// towards the current state, and false if it is up to date.
func (s *Stream) next(last events.Event) (events.Event, bool) {
	cur := s.current
	if !s.has {
		return events.Event{}, false
	}
	if last.Kind == events.Elected && !sameState(cur, last) {
		if cur.Kind == events.Revoked && sameTerm(cur, last) {
			return cur, true
		}
		return s.revocationOf(last), true
	}
	if (cur.Kind == events.Elected || cur.Kind == events.LeaderChanged) && !sameState(cur, last) {
		return cur, true
	}
	return events.Event{}, false
}

// revocationOf returns the events.Revoked event ending term e when the current
// state has moved past it: the one published for it, so its reason
// survives, or a synthesized one if the owner never published it.
func (s *Stream) revocationOf(e events.Event) events.Event {
	if s.owed.Kind == events.Revoked && sameTerm(s.owed, e) {
		return s.owed
	}
	r := e
	r.Kind, r.Reason = events.Revoked, events.ErrLeaseExpired
	return r
}

// sameTerm reports whether a and b are about the same term.
// sameState reports whether a and b describe the same state: the same kind
// of the same term (or the same holder, for observers).
func sameState(a, b events.Event) bool {
	return a.Kind == b.Kind && a.Token == b.Token && a.Holder == b.Holder && a.Slot == b.Slot
}

func sameTerm(a, b events.Event) bool { return a.Token == b.Token && a.Slot == b.Slot }
