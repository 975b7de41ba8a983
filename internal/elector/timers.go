package elector

import "time"

// waker finds the earliest time something not yet due becomes due.
type waker struct {
	now, next time.Time
}

// due reports whether t has come; if not, t is a candidate for the wake
// timer.
func (w *waker) due(t time.Time) bool {
	if !w.now.Before(t) {
		return true
	}
	w.next = earlier(w.next, t)
	return false
}

// arm sets timer for the earliest time noted, or stops it if none.
func (w *waker) arm(timer *time.Timer) {
	if w.next.Equal(never) {
		timer.Stop()
		return
	}
	timer.Reset(w.next.Sub(w.now))
}

func stoppedTimer() *time.Timer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
