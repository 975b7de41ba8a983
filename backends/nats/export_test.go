package nats

// LockKey is the key of the lock name's record, for tests that tamper
// with it.
func LockKey(name string) string { return lockPrefix + keyOf(name) }
