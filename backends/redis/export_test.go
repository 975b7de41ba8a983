package redis

import "github.com/hustings/hustings/backends"

// LockKey returns the key of lock name, for tests that change it behind
// its holder's back.
func LockKey(b *Backend, name string) string { return b.keys(name).lock }

// SessionKey returns the key of session s, which b opened.
func SessionKey(s backends.Session) string { return s.(*session).key }

// Channel returns the channel that lock name's takes and releases are
// published to.
func Channel(b *Backend, name string) string { return b.keys(name).channel }
