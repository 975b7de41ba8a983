package elector

import "time"

// waker finds the earliest time something not yet due becomes due.
type waker struct {
	now, next time.Time
}

// due reports whether t has come; if not, t is a candidate for the wake
// alarm.
func (w *waker) due(t time.Time) bool {
	if !w.now.Before(t) {
		return true
	}
	w.next = earlier(w.next, t)
	return false
}

// arm sets the alarm for the earliest time noted, or stops it if none.
func (w *waker) arm(al *alarm) {
	if w.next.Equal(never) {
		al.stop()
		return
	}
	al.set(w.next.Sub(w.now))
}

// alarm calls f in a goroutine of the runtime's when it goes off: a timer
// that costs no goroutine while it waits, made at its first set. f must
// tolerate a late call (one already on its way when the alarm was moved
// or stopped).
type alarm struct {
	f func()
	t *time.Timer
}

func (al *alarm) set(d time.Duration) {
	if al.t == nil {
		al.t = time.AfterFunc(d, al.f)
		return
	}
	al.t.Reset(d)
}

func (al *alarm) stop() {
	if al.t != nil {
		al.t.Stop()
	}
}

// never is a time that does not come.
var never = time.Unix(1<<62, 0)

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
