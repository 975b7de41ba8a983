package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/dial"
	"github.com/hustings/hustings/events"
)

// reorder is how long the timeline holds an event before printing it.
// Events reach it from one goroutine per subscription, each a few
// microseconds after it happened, so two events close together can arrive
// in either order; holding them a little lets the rows come out in the
// order they happened.
const reorder = 50 * time.Millisecond

// timeline prints events and notes as aligned rows in time order, elapsed
// time first: each row shows when its event happened, and the rows never
// go back in time (a revocation comes before the election it made
// possible). A note is printed at once, after every event held. flush
// prints the events still held; call it before the output ends. Safe for
// concurrent use.
type timeline struct {
	mu     sync.Mutex
	w      io.Writer
	start  time.Time
	groups map[string]bool // names of groups, whose events show a slot

	lockW, tokenW int         // column widths; they grow to fit
	headed        bool        // the header was printed
	held          []heldRow   // events not printed yet, oldest first
	last          time.Time   // of the last line printed
	timer         *time.Timer // prints the held rows once due; nil when none
}

// heldRow is an event's row waiting to be printed.
type heldRow struct {
	at    time.Time
	cells [5]string // candidate, event, lock, token, detail
}

// newTimeline returns a timeline that writes to w; target sizes the token
// column (Redis tokens have 16 digits).
func newTimeline(w io.Writer, target dial.Target) *timeline {
	tokenW := map[string]int{"redis": 16, "etcd": 8, "zk": 11, "postgres": 8, "mysql": 8, "nats": 8, "consul": 8, "mongodb": 16}[target.Scheme]
	return &timeline{w: w, start: time.Now(), lockW: 14, tokenW: max(tokenW, 5)}
}

// header prints the column names.
func (t *timeline) header() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.printDue(time.Now())
	t.headed = true
	t.printHeader()
}

// event prints one campaign event; group events name their slot.
func (t *timeline) event(e events.Event) {
	detail := ""
	switch e.Kind {
	case events.Elected:
		detail = "deadline +" + e.Deadline.Sub(e.Time).Round(time.Millisecond).String()
	case events.Revoked:
		detail = reason(e.Reason)
	}
	lock := e.Name[strings.LastIndex(e.Name, "/")+1:]
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.groups[e.Name] {
		lock = fmt.Sprintf("%s[%d]", lock, e.Slot)
	}
	r := heldRow{at: e.Time, cells: [5]string{e.Holder, e.Kind.String(), lock, fmt.Sprint(e.Token), detail}}
	i, _ := slices.BinarySearchFunc(t.held, r.at, func(h heldRow, at time.Time) int { return h.at.Compare(at) })
	t.held = slices.Insert(t.held, i, r)
	t.printDue(time.Now().Add(-reorder))
	t.arm()
}

// note prints a line of narration, after the events held.
func (t *timeline) note(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	t.printDue(now)
	fmt.Fprintf(t.w, "%10s  # %s\n", t.elapsed(now), fmt.Sprintf(format, args...))
}

// flush prints every event held.
func (t *timeline) flush() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
	t.printDue(time.Now().Add(time.Hour))
}

// group marks name as a group's, so its events show their slot.
func (t *timeline) group(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.groups == nil {
		t.groups = map[string]bool{}
	}
	t.groups[name] = true
}

// arm makes sure the held rows get printed once due, even if nothing else
// reaches the timeline by then. t.mu is held.
func (t *timeline) arm() {
	if t.timer != nil || len(t.held) == 0 {
		return
	}
	t.timer = time.AfterFunc(time.Until(t.held[0].at.Add(reorder)), func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		t.timer = nil
		t.printDue(time.Now().Add(-reorder))
		t.arm()
	})
}

// printDue prints the held rows of events that happened up to until.
// t.mu is held.
func (t *timeline) printDue(until time.Time) {
	n := 0
	for ; n < len(t.held) && !t.held[n].at.After(until); n++ {
		t.printRow(t.held[n])
	}
	t.held = slices.Delete(t.held, 0, n)
}

func (t *timeline) printRow(r heldRow) {
	c := r.cells
	if len(c[2]) > t.lockW || len(c[3]) > t.tokenW {
		t.lockW, t.tokenW = max(t.lockW, len(c[2])), max(t.tokenW, len(c[3]))
		if t.headed {
			t.printHeader() // the columns widened: name them again
		}
	}
	fmt.Fprintf(t.w, "%10s  %-9s  %-8s  %-*s  %*s  %s\n", t.elapsed(r.at), c[0], c[1], t.lockW, c[2], t.tokenW, c[3], c[4])
}

func (t *timeline) printHeader() {
	fmt.Fprintf(t.w, "%10s  %-9s  %-8s  %-*s  %*s  %s\n", "elapsed", "candidate", "event", t.lockW, "lock", t.tokenW, "token", "detail")
}

// elapsed formats the time since the start, never before the last line
// printed: an event that reached the timeline later than reorder shows
// the time of the line before it. t.mu is held.
func (t *timeline) elapsed(at time.Time) string {
	if at.Before(t.last) {
		at = t.last
	}
	t.last = at
	return fmt.Sprintf("%.1fms", float64(at.Sub(t.start).Microseconds())/1000)
}

// reasons are the revocation reasons the demo tells apart, the first
// whose errors a reason all matches: a code for the node's JSON lines and
// a phrase for the timeline.
var reasons = []struct {
	errs         []error
	code, phrase string
}{
	{[]error{events.ErrResigned, context.Canceled}, "canceled", "context canceled"},
	{[]error{events.ErrResigned, context.DeadlineExceeded}, "canceled", "context deadline exceeded"},
	{[]error{events.ErrResigned}, "resigned", "resigned"},
	{[]error{events.ErrLeaseExpired, backends.ErrUnavailable}, "unreachable", "backend unreachable at the deadline"},
	{[]error{events.ErrLeaseExpired}, "lease-expired", "lease expired"},
	{[]error{events.ErrSessionLost}, "session-lost", "session lost"},
	{[]error{events.ErrLockLost}, "lock-lost", "lock lost: removed from the backend"},
}

// matches reports whether err matches every one of errs.
func matches(err error, errs []error) bool {
	for _, e := range errs {
		if !errors.Is(err, e) {
			return false
		}
	}
	return true
}

// reasonCode returns the code of a revocation reason: "other" for an error
// none of reasons wraps, "" for nil.
func reasonCode(err error) string {
	if err == nil {
		return ""
	}
	for _, r := range reasons {
		if matches(err, r.errs) {
			return r.code
		}
	}
	return "other"
}

// reason names a revocation reason briefly.
func reason(err error) string {
	for _, r := range reasons {
		if matches(err, r.errs) {
			return r.phrase
		}
	}
	if err == nil {
		return ""
	}
	return err.Error()
}
