package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
)

// runWho prints the holder of each lock, one line each, in the order
// given; it stops at the first read that fails.
func runWho(ctx context.Context, c *cli, args []string) int {
	var f flags
	rest, code, ok := c.parse("who", args, &f, true)
	if !ok {
		return code
	}
	names, code, ok := c.lockNames("who", rest, f.slots)
	if !ok {
		return code
	}
	b, closeStore, code, ok := c.connect(ctx, f)
	if !ok {
		return code
	}
	defer closeStore()
	for _, name := range names {
		rctx, cancel := context.WithTimeout(ctx, f.timeout)
		h, err := b.Holder(rctx, name)
		cancel()
		if err != nil {
			return c.fail(exitFailure, "who %s: %v", name, err)
		}
		holderLine(name, h).print(c.stdout, f.json, time.Now())
	}
	return exitOK
}

// line is what who and watch print of one lock.
type line struct {
	Time    time.Time    `json:"time,omitzero"` // watch: when the change was seen
	Name    string       `json:"name"`
	Holder  string       `json:"holder"` // "" when free
	Token   events.Token `json:"token,omitempty"`
	Expires time.Time    `json:"expires,omitzero"`
	Session string       `json:"session,omitempty"`
}

// print writes l as one line: JSON, or words for people, with the time
// left until Expires as of now.
func (l line) print(w io.Writer, asJSON bool, now time.Time) {
	if asJSON {
		data, _ := json.Marshal(l) // strings, numbers and times always marshal
		fmt.Fprintf(w, "%s\n", data)
		return
	}
	var s strings.Builder
	if !l.Time.IsZero() {
		s.WriteString(l.Time.UTC().Format("2006-01-02T15:04:05.000Z") + "  ")
	}
	s.WriteString(l.Name)
	if l.Holder == "" {
		s.WriteString("  free")
		fmt.Fprintln(w, s.String())
		return
	}
	fmt.Fprintf(&s, "  held by %s  token %d", l.Holder, l.Token)
	if !l.Expires.IsZero() {
		fmt.Fprintf(&s, "  expires %s (%s)", l.Expires.UTC().Format("2006-01-02T15:04:05.000Z"), until(l.Expires.Sub(now)))
	}
	if l.Session != "" {
		s.WriteString("  session " + l.Session)
	}
	fmt.Fprintln(w, s.String())
}

// until says how far d is from now: "in 4.2s", "0.3s ago".
func until(d time.Duration) string {
	r := d.Round(100 * time.Millisecond)
	if d < 0 {
		return (-r).String() + " ago, unless renewed since"
	}
	return "in " + r.String() + " unless renewed"
}

// holderLine is the line of name held as h says.
func holderLine(name string, h backends.Holder) line {
	return line{Name: name, Holder: h.ID, Token: h.Token, Expires: h.Expires, Session: h.Session}
}
