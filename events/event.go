package events

import (
	"errors"
	"fmt"
	"time"
)

// Token is a fencing token: a number that strictly increases per lock name
// (and slot) across every holder and every restart of the candidates. A
// resource protected by a lock should reject writes that carry a token lower
// than the highest it has seen.
type Token uint64

// Kind says what an Event reports.
type Kind int

const (
	// Elected reports that the campaign's candidate holds the lock; the
	// backend has confirmed it.
	Elected Kind = iota + 1
	// Revoked reports that the term announced by the Elected event with the
	// same token has ended. Reason says why.
	Revoked
	// LeaderChanged is sent to observers: Holder and Token name the new
	// holder, or Holder is empty when nobody holds the lock.
	LeaderChanged
)

// String returns the lower-case name of the kind ("elected", "revoked",
// "leader-changed").
func (k Kind) String() string {
	switch k {
	case Elected:
		return "elected"
	case Revoked:
		return "revoked"
	case LeaderChanged:
		return "leader-changed"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Reasons a term is revoked, carried in Event.Reason and matched with
// errors.Is.
var (
	// ErrResigned: the candidate gave the term up gracefully: Resign,
	// Close, or the end of the context its campaign ran under (the reason
	// then also matches that context's error, context.Canceled or
	// context.DeadlineExceeded).
	ErrResigned = errors.New("events: resigned")
	// ErrLeaseExpired: the local deadline passed without a successful
	// renewal. When the backend failed or had not answered by then, the
	// reason also matches backends.ErrUnavailable and wraps the last
	// failure.
	ErrLeaseExpired = errors.New("events: lease expired")
	// ErrSessionLost: the backend reported that the candidate's session (and
	// so every lock of it) is gone.
	ErrSessionLost = errors.New("events: session lost")
	// ErrLockLost: the session lives, but the backend no longer holds the
	// lock for it: deleted or evicted behind its back, its lease revoked.
	// Another candidate may already hold it.
	ErrLockLost = errors.New("events: lock lost")
)

// Event is one change of leadership, as seen by one campaign or observer.
type Event struct {
	// Kind is Elected, Revoked or LeaderChanged.
	Kind Kind
	// Name is the full lock name, prefix included.
	Name string
	// Slot is the slot number within a group, from 0 to its size less
	// one; 0 for a single lock too.
	Slot int
	// Token is the fencing token of the term. For LeaderChanged it is the
	// token of the new holder, or 0 when there is none.
	Token Token
	// Holder is the ID of the candidate holding the lock; for Elected and
	// Revoked it is the campaign's own candidate.
	Holder string
	// Time is when the event happened, on the publisher's clock.
	Time time.Time
	// Deadline is the term's local deadline as of this event: the campaign
	// revokes the term no later than this. Zero for LeaderChanged.
	Deadline time.Time
	// Reason says why a term was revoked (one of the Err* values above,
	// possibly wrapped); nil for other kinds.
	Reason error
}

// String formats the event for logs: kind, name, slot, holder and token.
func (e Event) String() string {
	s := fmt.Sprintf("%s %s", e.Kind, e.Name)
	if e.Slot != 0 {
		s += fmt.Sprintf("[%d]", e.Slot)
	}
	if e.Holder != "" {
		s += " holder=" + e.Holder
	}
	s += fmt.Sprintf(" token=%d", e.Token)
	if e.Reason != nil {
		s += " reason=" + e.Reason.Error()
	}
	return s
}
