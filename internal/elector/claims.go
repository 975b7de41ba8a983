package elector

// The names a session's campaigns and runs claim, and the orphans they
// leave: locks whose release failed, released by the keep-alive.

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
)

// attach claims names for an elector about to run on the session. It
// fails if another elector on the session runs for one of them (both
// would be told they hold it, with one token), or if the session is
// closed.
func (c *Session) attach(names []string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.phase >= sessionStopping {
		return ErrClosed
	}
	for _, n := range names {
		if c.claims[n] {
			return fmt.Errorf("%w: another campaign on session %s already runs for %q", ErrInvalid, c.cfg.ID, n)
		}
	}
	for _, n := range names {
		c.claims[n] = true
	}
	c.attached++
	return nil
}

// join attaches a campaign: it claims its names (see attach) and is told
// of every change of the session from then on.
func (c *Session) join(a *actor) error {
	if err := c.attach(a.e.slots); err != nil {
		return err
	}
	c.mu.Lock()
	c.actors[a] = true
	c.expiry.join(c, a.cfg().MarginFor(a.cfg().TTL))
	c.mu.Unlock()
	return nil
}

// leave detaches a campaign that has finished.
func (c *Session) leave(a *actor) {
	c.mu.Lock()
	delete(c.actors, a)
	c.mu.Unlock()
	c.detach(a.e.slots)
}

// detach gives the names back once the elector's Run is over.
func (c *Session) detach(names []string) {
	c.mu.Lock()
	for _, n := range names {
		delete(c.claims, n)
	}
	c.attached--
	c.mu.Unlock()
	select {
	case c.detached <- struct{}{}:
	default:
	}
}

func (c *Session) attachedCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.attached
}

// orphan records a lock an elector failed to release on session
// generation gen; the session retries the release at each renewal.
func (c *Session) orphan(name string, token events.Token, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.orphans[name] = orphan{token: token, gen: gen}
}

// orphaned reports whether one of names waits for such a release: no
// elector may acquire it before, or it would get the old token back.
func (c *Session) orphaned(names []string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range names {
		if o, ok := c.orphans[n]; ok && o.gen == c.cur.gen {
			return true
		}
	}
	return false
}

// releaseOrphans retries the releases electors could not make on the
// current session; those of older sessions went with them.
func (c *Session) releaseOrphans(ctx context.Context, cur shared) {
	c.mu.Lock()
	todo := maps.Clone(c.orphans)
	c.mu.Unlock()
	for name, o := range todo {
		var err error
		if o.gen == cur.gen {
			err = cur.sess.Release(ctx, name, o.token, 0)
		}
		if err == nil || errors.Is(err, backends.ErrNotHeld) {
			c.mu.Lock()
			if c.orphans[name] == o {
				delete(c.orphans, name)
			}
			c.mu.Unlock()
		}
	}
}
