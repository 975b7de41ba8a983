package kubernetes

import (
	"maps"
	"strconv"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hustings/hustings/events"
)

// taken is what a session remembers of a lock Lease it holds, so that
// Release can write it without reading it first: the resourceVersion of
// the Lease as the session last wrote or read it, and what else it
// cannot rebuild (the rest is the backend's labels and annotations).
// Forty-eight bytes a held lock, and its line's while it has waiters; a
// Lease that carries anything else (a fenced annotation of an earlier
// term, a label or owner someone added) is not remembered, and its
// Release reads it.
type taken struct {
	token       events.Token
	rv          uint64 // the Lease's resourceVersion
	acquired    int64  // spec.acquireTime, Unix microseconds
	transitions int32  // spec.leaseTransitions
	waiters     string // the line, as recorded
}

// remember records l, a lock Lease that names the session under token
// (the reply to its take, or a read of it), for Release.
func (s *session) remember(name string, token events.Token, l *coordv1.Lease) {
	m, ok := s.memo(name, token, l)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !ok {
		delete(s.taken, name)
		return
	}
	if s.taken == nil {
		s.taken = map[string]taken{}
	}
	s.taken[name] = m
}

// memo returns what to remember of l, if the session can rebuild it from
// that: l is exactly what take makes, with no more.
func (s *session) memo(name string, token events.Token, l *coordv1.Lease) (taken, bool) {
	rv, err := tokenOf(l.ResourceVersion)
	sp := l.Spec
	switch {
	case err != nil, sp.HolderIdentity == nil || *sp.HolderIdentity != s.id, sp.AcquireTime == nil, sp.LeaseTransitions == nil,
		sp.PreferredHolder != nil, sp.Strategy != nil, len(l.OwnerReferences) > 0, len(l.Finalizers) > 0:
		return taken{}, false
	}
	m := taken{token: token, rv: uint64(rv), acquired: sp.AcquireTime.UnixMicro(), transitions: *sp.LeaseTransitions, waiters: l.Annotations[annWaiters]}
	lease := msOf(l.Annotations, annLeaseMS)
	rebuilt := s.rebuild(name, m, lease)
	if !maps.Equal(rebuilt.Labels, l.Labels) || !maps.Equal(rebuilt.Annotations, l.Annotations) {
		return taken{}, false
	}
	return m, true
}

// recall returns, and forgets, what the session remembers of the lock
// name held under token; a memory of name under another token stays.
func (s *session) recall(name string, token events.Token) (taken, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.taken[name]
	if !ok || m.token != token {
		return taken{}, false
	}
	delete(s.taken, name)
	return m, true
}

// rebuild returns the lock Lease name as the session's take left it
// (lease: the lock's own lease, as its annotation records it; its
// leaseDurationSeconds and renewTime, which a release overwrites, are
// left out), at the remembered resourceVersion.
func (s *session) rebuild(name string, m taken, lease time.Duration) *coordv1.Lease {
	l := &coordv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Name:            s.b.LockLease(name),
			ResourceVersion: strconv.FormatUint(m.rv, 10),
			Labels:          s.b.labels(kindLock),
			Annotations:     map[string]string{annName: name, annToken: strconv.FormatUint(uint64(m.token), 10)},
		},
		Spec: coordv1.LeaseSpec{
			HolderIdentity:   &s.id,
			AcquireTime:      micro(time.UnixMicro(m.acquired)),
			LeaseTransitions: &m.transitions,
		},
	}
	l.Labels[labelSession] = s.lease
	if lease > 0 {
		l.Annotations[annLeaseMS] = ms(lease)
	}
	if m.waiters != "" {
		l.Annotations[annWaiters] = m.waiters
	}
	return l
}
