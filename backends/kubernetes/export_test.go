package kubernetes

import (
	"strconv"
	"sync"
	"time"

	coordv1 "k8s.io/api/coordination/v1"

	"github.com/hustings/hustings/backends/internal/hub"
)

// SetWatchTimeout makes the server end each watch request of b after d
// (whole seconds), so that tests see the watch resume.
func SetWatchTimeout(b *Backend, d time.Duration) { b.watchTimeout = int64(d / time.Second) }

// SessionLease returns the name of the Lease of a session of this package.
func SessionLease(s any) string { return s.(*session).lease }

// Watched returns the Lease of the lock name as b's watch last delivered
// it, as Acquire finds it; nil if none.
func Watched(b *Backend, name string) *coordv1.Lease { return b.hub.lease(name) }

// SetWatched makes b's watch show l as the Lease of the lock name, as a
// watch that runs behind would; a Watch of name must be open.
func SetWatched(b *Backend, name string, l *coordv1.Lease) {
	b.hub.current(func(v hub.View[watched]) { v.State(name).lease = l })
}

// Prefix returns the Lease-name prefix of b.
func Prefix(b *Backend) string { return b.prefix }

// HoldDeliveries makes b's watch deliver nothing more until release is
// called, as a watch that runs behind would.
func HoldDeliveries(b *Backend) (release func()) {
	ch := make(chan struct{})
	b.held.Store(&ch)
	return sync.OnceFunc(func() {
		b.held.Store(nil)
		close(ch)
	})
}

// LineSeen returns the resourceVersion at which b's watch last saw the
// line of the lock name, held by a listening session of b; "" if none.
func LineSeen(b *Backend, name string) string {
	var rv string
	b.hub.current(func(hub.View[watched]) {
		if ls, ok := b.hub.lines[name]; ok {
			rv = strconv.FormatUint(uint64(ls.rv), 10)
		}
	})
	return rv
}
