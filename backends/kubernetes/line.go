package kubernetes

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
)

var _ interface {
	backends.Session
	backends.Dequeuer
	backends.LineWatcher
} = (*session)(nil)

// waiter is one entry of a lock's line: a session waiting for the lock,
// as the annotation hustings.io/waiters lists it, oldest first.
type waiter struct {
	Session string `json:"s"`   // the session Lease
	ID      string `json:"id"`  // its candidate ID, the holderIdentity it gets
	TTL     int64  `json:"ttl"` // its TTL in milliseconds, for leaseDurationSeconds
}

// lineOf reads the line of a lock Lease; one that does not parse is
// empty (the next write drops it).
func lineOf(l *coordv1.Lease) []waiter {
	raw := l.Annotations[annWaiters]
	if raw == "" {
		return nil
	}
	var line []waiter
	if json.Unmarshal([]byte(raw), &line) != nil {
		return nil
	}
	return line
}

// setLine records line in l, which the caller owns; an empty line
// removes the annotation.
func setLine(l *coordv1.Lease, line []waiter) {
	if len(line) == 0 {
		delete(l.Annotations, annWaiters)
		return
	}
	raw, _ := json.Marshal(line) // strings and numbers: never fails
	if l.Annotations == nil {
		l.Annotations = map[string]string{}
	}
	l.Annotations[annWaiters] = string(raw)
}

// without returns line less the entry of the session Lease named lease.
func without(line []waiter, lease string) []waiter {
	return slices.DeleteFunc(slices.Clone(line), func(w waiter) bool { return w.Session == lease })
}

// inLine reports whether line has an entry of the session Lease lease.
func inLine(line []waiter, lease string) bool {
	return slices.ContainsFunc(line, func(w waiter) bool { return w.Session == lease })
}

// WatchInLine is Backend.Watch for a candidate that waits for name on
// the session (see backends.LineWatcher): while the channel is open, an
// Acquire of the session that finds name held by another session puts it
// in name's line, with one update of the lock Lease, once (see Acquire).
// Ending the watch leaves the session in line; Dequeue or Close takes it
// out.
func (s *session) WatchInLine(ctx context.Context, name string) (<-chan struct{}, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	ch, err := s.b.Watch(ctx, name)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.waiting == nil {
		s.waiting = map[string]int{}
	}
	s.waiting[name]++
	s.mu.Unlock()
	context.AfterFunc(ctx, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.waiting[name]--; s.waiting[name] <= 0 {
			delete(s.waiting, name)
		}
	})
	return ch, nil
}

// stand is Acquire's answer to a lock that another session holds in l:
// a session that waits for it (a WatchInLine of name is open, and it
// asked for no lease, as the term a release names it to has none) is
// put in the lock's line by one update of l, conditioned on its
// resourceVersion, unless it is there already; any other writes
// nothing. It reports again if the update was refused on a stale
// resourceVersion: read, judge and stand again.
func (s *session) stand(ctx context.Context, name string, l *coordv1.Lease, lease time.Duration) (again bool, err error) {
	rv, err := tokenOf(l.ResourceVersion)
	s.mu.Lock()
	waiting := s.waiting[name] > 0
	since, queued := s.line[name]
	s.mu.Unlock()
	switch {
	case err != nil, lease > 0, !waiting:
		return false, nil
	case queued && since > rv:
		return false, nil // a copy from before the join: the watch brings it
	case inLine(lineOf(l), s.lease):
		s.queued(name, rv)
		return false, nil
	}
	next := l.DeepCopy()
	setLine(next, append(lineOf(l), waiter{Session: s.lease, ID: s.id, TTL: s.ttl.Milliseconds()}))
	joined, err := s.b.leases.Update(ctx, next, metav1.UpdateOptions{})
	switch {
	case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		// It may have been applied: the session counts as in line, and
		// its Dequeue reads the Lease.
		s.queued(name, rv+1)
		return false, translate(ctx, "acquire: join the line", err)
	}
	at, err := tokenOf(joined.ResourceVersion)
	if err != nil {
		at = rv + 1
	}
	s.queued(name, at)
	return false, nil
}

// queued records that the session is in name's line since the
// resourceVersion at: a term that names it under a token at or above at
// was named by a release after it joined, so it was never the session's
// own term (ended by its own release); its Acquire adopts it.
func (s *session) queued(name string, at events.Token) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.line == nil {
		s.line = map[string]events.Token{}
	}
	if old, ok := s.line[name]; !ok || at < old {
		s.line[name] = at
	}
}

// unqueued forgets the session's place in name's line.
func (s *session) unqueued(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.line, name)
}

// lines returns the names of the lines the session is in.
func (s *session) lines() map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]bool, len(s.line))
	for name := range s.line {
		out[name] = true
	}
	return out
}

// namedSince returns the resourceVersion since which the session is in
// name's line, if it is.
func (s *session) namedSince(name string) (events.Token, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.line[name]
	return at, ok
}
