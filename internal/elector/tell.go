package elector

// set changes the state. The campaigns on the session hear of it in a
// goroutine of the session's (tell), never in the caller's: the keep-alive
// never waits for their locks, which, with many campaigns on a busy
// machine, could make it late enough for the session to expire (a term
// never waits to be told either: see term.live).
func (c *Session) set(s shared) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.record(s)
	c.untold = true
	if !c.telling {
		c.telling = true
		c.tellers.Go(c.tell)
	}
}

// renew records a renewal and tells no campaign: a term's deadline is
// read from the session (term.live), and the session's one expiry alarm
// stands for every term's own until the deadline comes (see expiry), so
// a renewal costs the same whether one campaign or a hundred thousand
// are on the session. Whoever waits for a change (state) still hears of
// it.
func (c *Session) renew(s shared) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.record(s)
}

// record makes s the state, moves the expiry alarm and wakes whoever
// waits for a change; c.mu held.
func (c *Session) record(s shared) {
	s.closing = false // not stored: snapshot makes it from the phase
	c.cur = s
	c.expiry.follow(c, c.snapshot())
	close(c.changed)
	c.changed = make(chan struct{})
}

// tell tells every campaign on the session of the session's state, each
// under its own lock, until no change is left untold. A change that comes
// meanwhile is told in one more round: a campaign reads the state when
// told (adopt), so it never hears a stale one.
func (c *Session) tell() {
	for {
		c.mu.Lock()
		if !c.untold {
			c.telling = false
			c.mu.Unlock()
			return
		}
		c.untold = false
		actors := make([]*actor, 0, len(c.actors))
		for a := range c.actors {
			actors = append(actors, a)
		}
		c.mu.Unlock()
		for _, a := range actors {
			a.do(a.adopt)
		}
	}
}
