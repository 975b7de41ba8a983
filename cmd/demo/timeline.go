package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/hustings/hustings/events"
)

// timeline prints events and notes as aligned rows, elapsed time first.
// Safe for concurrent use.
type timeline struct {
	mu     sync.Mutex
	w      io.Writer
	start  time.Time
	groups map[string]bool // names of groups, whose events show a slot
}

func newTimeline(w io.Writer) *timeline { return &timeline{w: w, start: time.Now()} }

func (t *timeline) header() {
	t.row("elapsed", "candidate", "event", "lock", "token", "detail")
}

// event prints one campaign event; group events name their slot.
func (t *timeline) event(e events.Event) {
	detail := ""
	switch e.Kind {
	case events.Elected:
		detail = fmt.Sprintf("deadline +%v", e.Deadline.Sub(e.Time).Round(time.Millisecond))
	case events.Revoked:
		detail = reason(e.Reason)
	}
	lock := e.Name[strings.LastIndex(e.Name, "/")+1:]
	if t.isGroup(e.Name) {
		lock = fmt.Sprintf("%s[%d]", lock, e.Slot)
	}
	t.row(t.elapsed(e.Time), e.Holder, e.Kind.String(), lock, fmt.Sprint(e.Token), detail)
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

func (t *timeline) isGroup(name string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.groups[name]
}

// note prints a line of narration.
func (t *timeline) note(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(t.w, "%10s  # %s\n", t.elapsedLocked(time.Now()), fmt.Sprintf(format, args...))
}

func (t *timeline) row(elapsed, who, kind, lock, token, detail string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(t.w, "%10s  %-9s  %-8s  %-12s  %5s  %s\n", elapsed, who, kind, lock, token, detail)
}

func (t *timeline) elapsed(at time.Time) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.elapsedLocked(at)
}

func (t *timeline) elapsedLocked(at time.Time) string {
	return fmt.Sprintf("%.1fms", float64(at.Sub(t.start).Microseconds())/1000)
}

// reason names a revocation reason briefly.
func reason(err error) string {
	for _, r := range []struct {
		err  error
		name string
	}{
		{events.ErrResigned, "resigned"},
		{events.ErrUnreachable, "backend unreachable at the deadline"},
		{events.ErrLeaseExpired, "lease expired"},
		{events.ErrSessionLost, "session lost"},
		{events.ErrCanceled, "context canceled"},
	} {
		if errors.Is(err, r.err) {
			return r.name
		}
	}
	if err == nil {
		return ""
	}
	return err.Error()
}
