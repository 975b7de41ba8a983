package zookeeper

import (
	"sync"
	"time"
)

// clockSampleAge is how old a sample of the server's clock may be to
// bound it from above: in a loop of contended runs the sample is a few
// milliseconds old (the waiter's own node was just created); a retry
// after a longer wait reads the clock, as it always did.
const clockSampleAge = time.Second

// serverClock keeps the newest sample of the server's clock: the mtime a
// write was stamped with, and the local time the write was sent. Safe for
// concurrent use.
type serverClock struct {
	mu    sync.Mutex
	mtime int64     // ms since the epoch, on the server
	sent  time.Time // local clock, before the write was sent
}

// sample records that a write sent at sent was stamped mtime.
func (c *serverClock) sample(mtime int64, sent time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if sent.After(c.sent) {
		c.mtime, c.sent = mtime, sent
	}
}

// upper returns a time the server's clock has not reached yet, from a
// recent sample: the server stamped it after it was sent, so its clock
// has since moved on by at most the local time elapsed, padded by an
// eighth and 10 ms for clocks that run at slightly different rates. It
// is good only to find a deadline not passed yet (a holder alive): a
// deadline it says may have passed is judged on a fresh read. ok is
// false without a recent sample.
func (c *serverClock) upper() (ms int64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	age := time.Since(c.sent)
	if c.sent.IsZero() || age > clockSampleAge {
		return 0, false
	}
	return c.mtime + (age + age/8).Milliseconds() + 11, true
}
