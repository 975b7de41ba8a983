package kubernetes

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
)

// Labels and annotations the backend puts on its Leases. Labels select
// (the watch, a session's locks, a group's members); annotations carry
// what labels cannot hold (names of any UTF-8, numbers).
const (
	labelManagedBy = "app.kubernetes.io/managed-by"
	managedBy      = "hustings"
	labelPrefix    = "hustings.io/prefix"  // the Backend's prefix: every Lease
	labelKind      = "hustings.io/kind"    // kindLock, kindSession or kindMember
	labelSession   = "hustings.io/session" // the session Lease holding a lock, or owning an entry
	labelGroup     = "hustings.io/group"   // a member's group, hashed

	annName    = "hustings.io/name"     // a lock's or a group's name
	annToken   = "hustings.io/token"    // the holder's fencing token
	annLeaseMS = "hustings.io/lease-ms" // a lock's own lease, if it has one
	annHoldMS  = "hustings.io/hold-ms"  // set while released with a hold
	annTTLMS   = "hustings.io/ttl-ms"   // a session's TTL
	annEntry   = "hustings.io/entry"    // a member's score, weight and meta (JSON)
	annOrder   = "hustings.io/order"    // a member's order, once it was updated
	annWaiters = "hustings.io/waiters"  // a lock's line: the sessions waiting for it (JSON)

	kindLock    = "lock"
	kindSession = "session"
	kindMember  = "member"
)

// leaseName returns the name of the Lease of kind for name: the prefix,
// the kind, a readable part of name (lower case letters and digits) and
// 20 hex digits of its SHA-256, a valid DNS subdomain whatever name is.
// The annotation annName keeps name itself, and reads check it.
func leaseName(prefix, kind, name string) string {
	sum := sha256.Sum256([]byte(name))
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if b.Len() >= 40 {
			break
		}
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	readable := strings.TrimSuffix(b.String(), "-")
	if readable != "" {
		readable += "-"
	}
	return prefix + "-" + kind + "-" + readable + hex.EncodeToString(sum[:10])
}

// hashLabel returns a label value for name: 40 hex digits of its SHA-256.
func hashLabel(name string) string {
	sum := sha256.Sum256([]byte(name))
	return hex.EncodeToString(sum[:20])
}

// tokenOf parses a resourceVersion, or a token recorded from one. Since
// Kubernetes 1.35 a resourceVersion is a well-formed decimal integer
// (no sign, no leading zero, not 0) that increases with every write to
// the resource (k8s.io/apimachinery/pkg/util/resourceversion); on the
// etcd storage every server uses, it is etcd's revision, which fits 63
// bits.
func tokenOf(rv string) (events.Token, error) {
	if rv == "" || rv[0] == '0' {
		return 0, fmt.Errorf("kubernetes: resourceVersion %q is not a well-formed integer", rv)
	}
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("kubernetes: resourceVersion %q: %w", rv, err)
	}
	return events.Token(n), nil
}

// msOf parses a duration annotation in milliseconds; absent is 0.
func msOf(a map[string]string, key string) time.Duration {
	n, err := strconv.ParseInt(a[key], 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return time.Duration(n) * time.Millisecond
}

// ms formats d in whole milliseconds, rounded up.
func ms(d time.Duration) string {
	return strconv.FormatInt(int64((d+time.Millisecond-1)/time.Millisecond), 10)
}

// seconds returns d in whole seconds, rounded up, at least 1: the
// leaseDurationSeconds client-go observers read.
func seconds(d time.Duration) *int32 {
	s := int32(min((d+time.Second-1)/time.Second, 1<<30))
	return new(max(s, 1))
}

// micro returns t as a Lease time.
func micro(t time.Time) *metav1.MicroTime {
	m := metav1.NewMicroTime(t)
	return &m
}

// term is what a lock Lease says about its holder.
type term struct {
	name      string        // the lock's name (annotation)
	candidate string        // holderIdentity: the candidate ID; "" when free
	session   string        // the session Lease holding it; "" when free or on hold
	token     events.Token  // 0 when free
	lease     time.Duration // the lock's own lease; 0 for none
	hold      time.Duration // > 0 while released with a hold
}

// termOf reads a lock Lease.
func termOf(l *coordv1.Lease) term {
	a := l.Annotations
	t := term{name: a[annName], session: l.Labels[labelSession], lease: msOf(a, annLeaseMS), hold: msOf(a, annHoldMS)}
	if l.Spec.HolderIdentity != nil {
		t.candidate = *l.Spec.HolderIdentity
	}
	if tok, err := tokenOf(a[annToken]); err == nil && t.candidate != "" {
		t.token = tok
	}
	if t.token == 0 {
		return term{name: t.name} // free (or a record we did not write)
	}
	return t
}

// timed reports whether the term ends by a clock of its own, a lease or
// a hold: only then is its mark judged (see Backend.live), and worth
// recording; a term without either lives as long as its session.
func (t term) timed() bool { return t.lease > 0 || t.hold > 0 }

// mark returns what an observer's clock is set by for a lock Lease: the
// term and its phase, not the resourceVersion, so that fenced writes
// (which change the resourceVersion) never extend a lease or a hold.
func (t term) mark() string {
	if t.hold > 0 {
		return "hold/" + strconv.FormatUint(uint64(t.token), 10)
	}
	return "term/" + strconv.FormatUint(uint64(t.token), 10)
}

// conflictTries bounds the conflicts one update rides out on a lock
// Lease, pausing a little longer after each: each is another write to
// the Lease that landed first, such as a concurrent Fence, or a waiter
// joining the line.
const conflictTries = 32

// update changes the Lease named lease: it reads it (unless l, read
// already, is given), asks edit for the version to write, and writes it
// conditioned on the version read; after a conflict it reads the Lease
// again and asks edit again, up to conflictTries times. edit returns nil
// to write nothing, and what update returns. A Lease that is not there,
// or is gone by the write, returns gone's error.
func (b *Backend) update(ctx context.Context, op, lease string, l *coordv1.Lease, gone func() error, edit func(*coordv1.Lease) (*coordv1.Lease, error)) error {
	for try := range conflictTries {
		if try > 0 {
			pause(ctx, try)
		}
		if err := ctxErr(ctx, op); err != nil {
			return err
		}
		if l == nil {
			var err error
			if l, err = b.leases.Get(ctx, lease, metav1.GetOptions{}); apierrors.IsNotFound(err) {
				return gone()
			} else if err != nil {
				return translate(ctx, op, err)
			}
		}
		next, err := edit(l)
		if next == nil || err != nil {
			return err
		}
		_, err = b.leases.Update(ctx, next, metav1.UpdateOptions{})
		switch {
		case err == nil:
			return nil
		case apierrors.IsNotFound(err):
			return gone()
		case !apierrors.IsConflict(err):
			return translate(ctx, op, err)
		}
		l = nil
	}
	return fmt.Errorf("%w: kubernetes: %s: Lease %s changed under %d tries in a row", backends.ErrUnavailable, op, lease, conflictTries)
}

// pause waits a short jittered while, longer after more tries, or until
// ctx ends.
func pause(ctx context.Context, try int) {
	sleep(ctx, time.Duration(1+rand.IntN(2<<min(try, 5)))*time.Millisecond)
}
