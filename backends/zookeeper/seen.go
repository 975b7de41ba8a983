package zookeeper

import "sync"

// seenMax bounds the lock parents and the sessions a Backend remembers:
// past it, the sessions whose deadline the clock may have passed are
// forgotten, and then, as for parents, any one (each costs only a read).
const seenMax = 1024

// seen remembers what judge last read of other sessions' nodes, so that a
// look at a queue whose holder was found alive reads nothing while the
// holder's deadline is still ahead of the server's clock (a contended lock
// is looked at by each waiter two or three times per holder). It only
// ever answers that a holder is alive: a holder it cannot show alive is
// judged on fresh reads of both nodes, so it never makes one look dead
// early. A lock child's data and ctime are written once, at its creation,
// and a session's node only moves its mtime forward, so what it keeps
// ends no later than the truth, with two exceptions that keep a holder
// alive longer, up to the remembered deadline: a session node deleted
// before its lock children (a Close that fell back to deleting one node
// at a time, an operator), and a lock's parent (a container) deleted and
// made again, whose children's names start again from 0 (then the old
// node's token is reported too). It is used only for a child the look's
// listing shows. Safe for concurrent use.
type seen struct {
	mu       sync.Mutex
	holders  map[string]seenChild   // lock parent → the child last judged alive there
	sessions map[string]seenSession // sid → its node, as last read
}

// seenChild is a lock child as judge read it.
type seenChild struct {
	name    string
	data    lockData
	ctime   int64
	czxid   int64
	version int32
}

// seenSession is a session node as judge read it.
type seenSession struct {
	data    sessionData
	mtime   int64
	version int32
}

// child returns what was read of child name of parent, if it is the one
// last judged alive there.
func (s *seen) child(parent, name string) (seenChild, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.holders[parent]
	return c, ok && c.name == name
}

// session returns what was last read of session sid's node.
func (s *seen) session(sid string) (seenSession, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.sessions[sid]
	return n, ok
}

// alive records the child n of parent, whose session sid's node is sn,
// as judged alive.
func (s *seen) alive(parent string, n seenChild, sid string, sn seenSession, clock *serverClock) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.holders == nil {
		s.holders = make(map[string]seenChild)
		s.sessions = make(map[string]seenSession)
	}
	if _, ok := s.holders[parent]; !ok && len(s.holders) >= seenMax {
		dropOne(s.holders)
	}
	s.holders[parent] = n
	if _, ok := s.sessions[sid]; !ok && len(s.sessions) >= seenMax {
		s.forgetEnded(clock)
		if len(s.sessions) >= seenMax {
			dropOne(s.sessions)
		}
	}
	s.sessions[sid] = sn
}

// dropOne deletes any one entry of m.
func dropOne[V any](m map[string]V) {
	for k := range m {
		delete(m, k)
		return
	}
}

// forget drops what is known of parent's holder: it was found gone, or
// is no longer the holder.
func (s *seen) forget(parent string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.holders, parent)
}

// forgetEnded drops the sessions whose deadline may have passed (all of
// them without a recent sample of the server's clock). s.mu must be held.
func (s *seen) forgetEnded(clock *serverClock) {
	up, ok := clock.upper()
	for sid, n := range s.sessions {
		if !ok || n.mtime+n.data.TTL <= up {
			delete(s.sessions, sid)
		}
	}
}
