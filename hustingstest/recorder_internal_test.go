package hustingstest

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hustings/hustings/events"
)

// elect tells r's hook that holder's term of name began, with its
// deadline d from now, and returns its end.
func elect(r *Recorder, name, holder string, token events.Token, d time.Duration) func() {
	e := events.Event{Kind: events.Elected, Name: name, Holder: holder, Token: token, Time: time.Now(), Deadline: time.Now().Add(d)}
	th := recorderHook{r: r}.Term(context.Background(), e, "memory", time.Second, nil, nil)
	return func() {
		end := e
		end.Kind, end.Time = events.Revoked, time.Now()
		th.Ended(end)
	}
}

// TestRecorderRules: each rule the Recorder checks, broken once, is
// reported, and a history that keeps them all is not.
func TestRecorderRules(t *testing.T) {
	for _, tt := range []struct {
		name    string
		history func(r *Recorder)
		want    string // "" for no violation
	}{{
		name: "handover",
		history: func(r *Recorder) {
			end := elect(r, "l", "a", 1, time.Second)
			r.Wrote("l", 1)
			end()
			end = elect(r, "l", "b", 2, time.Second)
			r.Wrote("l", 2)
			end()
		},
	}, {
		name: "again on its own token",
		history: func(r *Recorder) {
			elect(r, "l", "a", 1, time.Second)()
			elect(r, "l", "a", 1, time.Second)()
		},
	}, {
		name: "overlap",
		history: func(r *Recorder) {
			end := elect(r, "l", "a", 1, time.Second)
			elect(r, "l", "b", 2, time.Second)()
			end()
		},
		want: "two terms in force at once",
	}, {
		name: "overlap after a tamper, ended at once",
		history: func(r *Recorder) {
			end := elect(r, "l", "a", 1, time.Second)
			r.Tampered("l")
			elect(r, "l", "b", 2, time.Second)()
			end()
		},
	}, {
		name: "overlap after a tamper, ended late",
		history: func(r *Recorder) {
			end := elect(r, "l", "a", 1, time.Second)
			r.Tampered("l")
			elect(r, "l", "b", 2, time.Second)()
			time.Sleep(Late + time.Millisecond)
			end()
		},
		want: "two terms in force at once",
	}, {
		name: "overlap after a tamper of another lock",
		history: func(r *Recorder) {
			end := elect(r, "l", "a", 1, time.Second)
			r.Tampered("m")
			elect(r, "l", "b", 2, time.Second)()
			end()
		},
		want: "two terms in force at once",
	}, {
		name: "stale write after a tamper",
		history: func(r *Recorder) {
			end := elect(r, "l", "a", 1, time.Second)
			r.Tampered("l")
			next := elect(r, "l", "b", 2, time.Second)
			r.Wrote("l", 2)
			r.Wrote("l", 1)
			end()
			next()
		},
		want: "a stale leader's write",
	}, {
		name: "token back",
		history: func(r *Recorder) {
			elect(r, "l", "a", 5, time.Second)()
			elect(r, "l", "b", 4, time.Second)()
		},
		want: "not above 5",
	}, {
		name: "same token, other holder",
		history: func(r *Recorder) {
			elect(r, "l", "a", 5, time.Second)()
			elect(r, "l", "b", 5, time.Second)()
		},
		want: "not above 5",
	}, {
		name: "late",
		history: func(r *Recorder) {
			end := elect(r, "l", "a", 1, time.Second)
			time.Sleep(time.Second + Late + time.Millisecond)
			end()
		},
		want: "after its deadline",
	}, {
		name: "write after the term",
		history: func(r *Recorder) {
			elect(r, "l", "a", 1, time.Second)()
			r.Wrote("l", 1)
		},
		want: "after its term ended",
	}, {
		name: "write under no term's token",
		history: func(r *Recorder) {
			defer elect(r, "l", "a", 1, time.Second)()
			r.Wrote("l", 7)
		},
		want: "which no term of l had",
	}, {
		name: "stale write",
		history: func(r *Recorder) {
			end := elect(r, "l", "a", 1, time.Second)
			r.Wrote("l", 2)
			r.Wrote("l", 1)
			end()
		},
		want: "a stale leader's write",
	}} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := NewRecorder()
				tt.history(r)
				err := r.Check()
				switch {
				case tt.want == "" && err != nil:
					t.Fatalf("Check = %v, want nil", err)
				case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
					t.Fatalf("Check = %v, want %q", err, tt.want)
				}
			})
		})
	}
}

// TestRecorderSeesOneShotRuns: a run's time under its lock, from its
// function's start to its return, is a term.
func TestRecorderSeesOneShotRuns(t *testing.T) {
	r := NewRecorder()
	run := recorderHook{r: r}.Run(context.Background(), "job", "memory", "a")
	done := run.Work(0, 3, time.Now().Add(time.Minute))
	r.Wrote("job", 3)
	done()
	r.Wrote("job", 3)
	if err := r.Check(); err == nil || !strings.Contains(err.Error(), "after its term ended") {
		t.Fatalf("Check = %v, want the write after the run", err)
	}
}
