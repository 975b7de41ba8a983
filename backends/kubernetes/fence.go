package kubernetes

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/validate"
)

// conflictTries bounds the conflicts one Fence, Release, Dequeue or
// Close rides out on a lock Lease, pausing a little longer after each:
// each is another write to the Lease that landed first, such as a
// concurrent Fence, or a waiter joining the line.
const conflictTries = 32

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
	for try := range conflictTries {
		if err := ctxErr(ctx, "fence"); err != nil {
			return err
		}
		l, err := b.leases.Get(ctx, b.LockLease(name), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return fmt.Errorf("%w: %q: its Lease is gone", backends.ErrNotHeld, name)
		case err != nil:
			return translate(ctx, "fence", err)
		}
		t, err := b.term(l, name)
		if err != nil {
			return err
		}
		if t.token != token || t.session == "" || t.hold > 0 {
			return fmt.Errorf("%w: %q is no longer held under token %d", backends.ErrNotHeld, name, token)
		}
		for k, v := range data {
			if v == "" {
				delete(l.Annotations, k)
			} else {
				l.Annotations[k] = v
			}
		}
		_, err = b.leases.Update(ctx, l, metav1.UpdateOptions{})
		switch {
		case err == nil:
			return nil
		case apierrors.IsConflict(err):
			pause(ctx, try)
		case apierrors.IsNotFound(err):
			return fmt.Errorf("%w: %q: its Lease is gone", backends.ErrNotHeld, name)
		default:
			return translate(ctx, "fence", err)
		}
	}
	return fmt.Errorf("%w: kubernetes: fence: %q changed under %d tries in a row", backends.ErrUnavailable, name, conflictTries)
}

// pause waits a short jittered while, longer after more tries, or until
// ctx ends.
func pause(ctx context.Context, try int) {
	sleep(ctx, time.Duration(1+rand.IntN(2<<min(try, 5)))*time.Millisecond)
}
