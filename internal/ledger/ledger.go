// Package ledger keeps a backend session's account of the locks it was
// granted, and of those a keep-alive found gone, for backends.Session.Lost.
package ledger

import (
	"maps"
	"sync"

	"github.com/hustings/hustings/events"
)

// Ledger records the locks a session was granted and has not released, and
// which of them the backend was found to hold for it no more. The zero
// value is ready; it is safe for concurrent use.
type Ledger struct {
	mu      sync.Mutex
	granted map[string]events.Token // by Acquire, not since released or found lost
	lost    map[string]events.Token // found gone, not since acquired or released
	losses  chan struct{}           // signalled (buffer 1) when lost gains a lock
}

// Losses returns a channel that receives a value whenever a lock goes to
// Lost (signals coalesce: the buffer holds one); the same channel on every
// call, never closed. For backends.Session.Losses.
func (l *Ledger) Losses() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lossesLocked()
}

func (l *Ledger) lossesLocked() chan struct{} {
	if l.losses == nil {
		l.losses = make(chan struct{}, 1)
	}
	return l.losses
}

// Granted records that Acquire gave the session name under tok.
func (l *Ledger) Granted(name string, tok events.Token) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.granted == nil {
		l.granted = map[string]events.Token{}
	}
	l.granted[name] = tok
	delete(l.lost, name)
}

// Released records a Release of name under tok, whatever its outcome: the
// session claims that grant no more. A grant of name under another token
// (a stale Release) stays; tok 0 matches any token.
func (l *Ledger) Released(name string, tok events.Token) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if cur, ok := l.granted[name]; ok && (tok == 0 || cur == tok) {
		delete(l.granted, name)
	}
	if cur, ok := l.lost[name]; ok && (tok == 0 || cur == tok) {
		delete(l.lost, name)
	}
}

// Held returns a copy of the locks to confirm: granted, not found lost.
func (l *Ledger) Held() map[string]events.Token {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.granted)
}

// Gone records that the backend no longer holds name under tok for the
// session, unless name was granted again (another token) or released
// meanwhile.
func (l *Ledger) Gone(name string, tok events.Token) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if cur, ok := l.granted[name]; !ok || cur != tok {
		return
	}
	delete(l.granted, name)
	if l.lost == nil {
		l.lost = map[string]events.Token{}
	}
	l.lost[name] = tok
	select {
	case l.lossesLocked() <- struct{}{}:
	default:
	}
}

// GoneAt is Gone for a backend whose tokens are revisions of its store
// (etcd's create revisions), told that the lock's key was deleted at
// revision rev: name moves to the lost locks if it was granted under a
// token below rev. A delete after the key's creation is the end of that
// grant's key (it must go before the key is made again); one before it
// ended an older key.
func (l *Ledger) GoneAt(name string, rev events.Token) {
	l.mu.Lock()
	cur, ok := l.granted[name]
	l.mu.Unlock()
	if ok && cur < rev {
		l.Gone(name, cur)
	}
}

// Lost returns a copy of the locks found gone, by name, with the token they
// were granted under; nil if none.
func (l *Ledger) Lost() map[string]events.Token {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lost) == 0 {
		return nil
	}
	return maps.Clone(l.lost)
}
