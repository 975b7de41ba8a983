package kubernetes

import (
	"context"
	"fmt"
	"strings"

	coordv1 "k8s.io/api/coordination/v1"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/validate"
)

// Fence writes data into the annotations of the lock name's Lease if,
// and only if, that Lease still records token for a holding session
// (not free, not released with a hold, not taken over, not deleted and
// made again): it reads the Lease, checks the token, and updates it
// conditioned on the resourceVersion it read, so the check and the write
// are one atomic step of the apiserver. A term that ended gets an error
// matching backends.ErrNotHeld and writes nothing; so does token 0. An
// empty value deletes its key. Keys must be valid annotation keys
// outside hustings.io/ (the backend's own), else backends.ErrInvalid.
//
// The apiserver has no transaction across objects: the one object a
// fence can guard atomically is the lock Lease itself, so fenced state
// lives there (small: all annotations of an object share 256 KiB).
// Protect another object with the token instead: keep the highest token
// seen in it and update it conditioned on its own resourceVersion,
// refusing lower tokens; that refuses every write of an older term once
// a newer one has written, but not a write of a released term before
// the next term's first. Concurrent Fence calls on one lock are
// serialized by conflicts (each retried, up to 32 times).
//
// Fence does not judge whether the holder's session still lives: a
// write it admits lands while no later term exists, since a later
// term's acquiring update would change the resourceVersion first.
func (b *Backend) Fence(ctx context.Context, name string, token events.Token, data map[string]string) error {
	if err := validate.Name(name); err != nil {
		return err
	}
	for k := range data {
		if k == "" || strings.HasPrefix(k, "hustings.io/") {
			return fmt.Errorf("%w: kubernetes: fence: annotation key %q is empty or the backend's own", backends.ErrInvalid, k)
		}
	}
	if token == 0 {
		return fmt.Errorf("%w: %q under token 0", backends.ErrNotHeld, name)
	}
	gone := func() error { return fmt.Errorf("%w: %q: its Lease is gone", backends.ErrNotHeld, name) }
	return b.update(ctx, "fence", b.LockLease(name), nil, gone, func(l *coordv1.Lease) (*coordv1.Lease, error) {
		t, err := b.term(l, name)
		if err != nil {
			return nil, err
		}
		if t.token != token || t.session == "" || t.hold > 0 {
			return nil, fmt.Errorf("%w: %q is no longer held under token %d", backends.ErrNotHeld, name, token)
		}
		for k, v := range data {
			if v == "" {
				delete(l.Annotations, k)
			} else {
				l.Annotations[k] = v
			}
		}
		return l, nil
	})
}
