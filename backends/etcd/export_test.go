package etcd

// LockKey returns the key of lock name in b, for tests that change it
// behind its holder's back.
func LockKey(b *Backend, name string) string { return b.lockKey(name) }
