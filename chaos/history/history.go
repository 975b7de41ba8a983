// Package history checks what a fault-injection run recorded: the events
// every candidate process printed, the faults injected, the writes a fenced
// resource saw, and whether beliefs and the backend agreed once faults
// healed.
//
// Check finds every violation of Hustings' contracts in a History and
// measures failover; it does no I/O and is deterministic, so a run's
// history can be saved and checked again. All times must come from one
// clock (one machine).
package history

import (
	"fmt"
	"time"

	"github.com/hustings/hustings/events"
)

// Kind is what an Event reports.
type Kind string

// The kinds of Event.
const (
	Elected Kind = "elected"
	Revoked Kind = "revoked"
)

// Key is one lock: a campaign's name, or one slot of a group.
type Key struct {
	Name string
	Slot int
}

// String formats k as name[slot].
func (k Key) String() string { return fmt.Sprintf("%s[%d]", k.Name, k.Slot) }

// Event is one election or revocation, as a candidate printed it. Events of
// one node must be in the order the node printed them.
type Event struct {
	Time time.Time
	Node string
	Key
	Kind     Kind
	Token    events.Token
	Deadline time.Time // the term's local deadline, when known
	Reason   string
}

// FaultKind names a fault.
type FaultKind string

// The faults a run injects, and the stalls nodes report.
const (
	Kill      FaultKind = "kill"      // SIGKILL of a process: it dies at From
	Stop      FaultKind = "stop"      // SIGTERM: a graceful stop at From
	Pause     FaultKind = "pause"     // SIGSTOP at From, SIGCONT at To
	Stall     FaultKind = "stall"     // a node saw its own clock jump (scheduling or GC); node "harness": the test process did; node "server": a direct read was slow
	Blackhole FaultKind = "blackhole" // one node's link drops everything
	Reset     FaultKind = "reset"     // one node's link resets every connection
	Latency   FaultKind = "latency"   // one node's link is slow
	Restart   FaultKind = "restart"   // the backend server restarts (Node is empty)
	Tamper    FaultKind = "tamper"    // Node's lock is deleted on the server behind its back, at From
)

// Fault is one fault in force from From to To (To == From for an instant).
type Fault struct {
	Kind     FaultKind
	Node     string
	From, To time.Time
}

// Write is one write a fenced resource received, in arrival order.
type Write struct {
	Time     time.Time
	Node     string
	Key      Key
	Token    events.Token
	Accepted bool
}

// Settle is one wait, after a fault healed, for every belief to match the
// backend (see Agree). Agreed is zero if they never did.
type Settle struct {
	Healed, Agreed time.Time
	Detail         string // what disagreed last, if anything
}

// History is everything one run recorded.
type History struct {
	Events  []Event
	Faults  []Fault
	Writes  []Write
	Settles []Settle
	// Leaks counts goroutines each node found left over at its graceful
	// exit; the harness adds its own under the key "".
	Leaks map[string]int
}

// Config holds the bounds Check holds a history to.
type Config struct {
	// Crash bounds the time from a leader's SIGKILL to its slot's next
	// Elected: TTL + retry + the backend's slack.
	Crash time.Duration
	// Graceful bounds the time from a leader's SIGTERM to its slot's next
	// Elected.
	Graceful time.Duration
	// Settle bounds how long after a fault heals beliefs may disagree with
	// the backend: 2 × TTL.
	Settle time.Duration
	// Tamper bounds how long a leader whose lock was deleted behind its
	// back may go on believing it leads: one keep-alive interval (a
	// renewal confirms the session's locks) and the renewal's round trip.
	Tamper time.Duration
	// NetOfOutages makes Crash, Graceful, Settle and Tamper count only time in
	// which the harness and the server answered: a failover or a settle
	// that took longer than its bound passes if it took no longer once the
	// outages within it (see Harness and Server) are taken away. make
	// test's short profile sets it: on a busy machine the server itself
	// stalls for seconds, whatever the candidates do. make chaos's long
	// profile, run on a quiet machine, holds the bounds in wall-clock time.
	NetOfOutages bool
}

// Term is one holding of a lock, from its Elected to its Revoked or to the
// death of its node: [From, To). Open terms (the run ended first) have a
// zero To.
type Term struct {
	Node string
	Key
	Token    events.Token
	From, To time.Time
	Died     bool // ended by the node's death, not by a Revoked
}
