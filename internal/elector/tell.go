package elector

// set changes the state. The campaigns on the session hear of it in a
// goroutine of the session's (tell), never in the caller's: the keep-alive
// does not wait for their locks. On a starved machine, telling ten
// thousand campaigns of a renewal took longer than the TTL; a keep-alive
// that waited for it came too late, the session expired, and the storm of
// re-acquires that followed starved the next one (a term never waits to
// be told either: see actor.lastRenewal).
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
	c.cur = s
	c.expiry.follow(c, s)
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
