package elector

import "time"

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
