package etcd

import clientv3 "go.etcd.io/etcd/client/v3"

// LockKey returns the key of lock name in b, for tests that change it
// behind its holder's back.
func LockKey(b *Backend, name string) string { return b.lockKey(name) }

// SessionKey returns the key of the session of lease in b, for tests that
// look at when it is put.
func SessionKey(b *Backend, lease clientv3.LeaseID) string { return b.sessionKey(lease) }
