package backendtest

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/hustings/hustings/events"
)

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	failed bool
	msg    string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(f string, args ...any) {
	r.failed, r.msg = true, r.msg+fmt.Sprintf(f, args...)+"; "
}
func (r *recorder) Fatalf(f string, args ...any) { r.Errorf(f, args...); r.FailNow() }
func (r *recorder) FailNow()                     { r.failed = true; runtime.Goexit() }

// checkLog runs CheckTerms on log with a recorder, in a goroutine FailNow can
// end.
func checkLog(t *testing.T, log []events.Event, n int) *recorder {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() { defer close(done); CheckTerms(r, log, n) }()
	<-done
	return r
}

func TestCheckTerms(t *testing.T) {
	t0 := time.Now()
	ev := func(ms int, kind events.Kind, holder string, slot int, tok events.Token) events.Event {
		return events.Event{Kind: kind, Name: "g", Slot: slot, Token: tok, Holder: holder, Time: t0.Add(time.Duration(ms) * time.Millisecond)}
	}
	good := []events.Event{
		ev(0, events.Elected, "a", 0, 1), ev(0, events.Elected, "b", 1, 1),
		ev(10, events.Revoked, "a", 0, 1), ev(10, events.Elected, "c", 0, 2),
		ev(20, events.Revoked, "b", 1, 1), ev(30, events.Revoked, "c", 0, 2),
	}
	if r := checkLog(t, good, 2); r.failed {
		t.Fatalf("good log failed: %s", r.msg)
	}
	for name, log := range map[string][]events.Event{
		"overlap":      {ev(0, events.Elected, "a", 0, 1), ev(5, events.Elected, "c", 0, 2), ev(10, events.Revoked, "a", 0, 1), ev(30, events.Revoked, "c", 0, 2)},
		"token back":   {ev(0, events.Elected, "a", 0, 2), ev(10, events.Revoked, "a", 0, 2), ev(10, events.Elected, "c", 0, 1), ev(30, events.Revoked, "c", 0, 1)},
		"open term":    {ev(0, events.Elected, "a", 0, 1)},
		"slot over n":  {ev(0, events.Elected, "a", 2, 1), ev(10, events.Revoked, "a", 2, 1)},
		"two slots":    {ev(0, events.Elected, "a", 0, 1), ev(1, events.Elected, "a", 1, 1), ev(10, events.Revoked, "a", 0, 1), ev(10, events.Revoked, "a", 1, 1)},
		"stray revoke": {ev(0, events.Revoked, "a", 0, 1)},
	} {
		if r := checkLog(t, log, 2); !r.failed {
			t.Errorf("%s: CheckTerms passed", name)
		}
	}
}
