package kubernetes

import "time"

// SetWatchTimeout makes the server end each watch request of b after d
// (whole seconds), so that tests see the watch resume.
func SetWatchTimeout(b *Backend, d time.Duration) { b.watchTimeout = int64(d / time.Second) }

// SessionLease returns the name of the Lease of a session of this package.
func SessionLease(s any) string { return s.(*session).lease }
