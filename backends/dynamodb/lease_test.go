package dynamodb_test

import (
	"errors"
	"testing"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/backendtest"
	"github.com/hustings/hustings/backends/dynamodb/dynamotest"
	"github.com/hustings/hustings/internal/testserver"
)

// leaseTTL is the session TTL of the lease tests.
const leaseTTL = 2 * time.Second

// TestRenewingHolderIsNeverTakenOver: a holder that renews changes its
// session's version, so a waiter in another process (a Backend of its
// own: its own clock and observations) restarts its wait at every
// renewal. Whenever the waiter takes the lock, the holder's last
// successful renewal started more than a TTL before (it had really
// expired on its owner's clock) and the holder's next KeepAlive is
// ErrSessionLost: no two holders at once.
func TestRenewingHolderIsNeverTakenOver(t *testing.T) {
	srv := dynamotest.Start(t)
	holder, waiter := newBackend(t, srv.Client()), newBackend(t, srv.Client())
	a := backendtest.Open(t, holder, "a", leaseTTL)
	b := backendtest.Open(t, waiter, "b", 10*leaseTTL)
	tok := backendtest.Acquire(t, a, "renewed")
	renewed := time.Now() // a lower bound of the start of a's last renewal (its Open)
	for end := time.Now().Add(3 * leaseTTL); time.Now().Before(end); {
		// Kept as a sleep: a holder renewing at its own pace, for three
		// TTLs of real time, is what is tested; there is nothing to wait on.
		time.Sleep(leaseTTL / 10)
		start := time.Now()
		if err := a.KeepAlive(t.Context()); err != nil {
			t.Fatalf("KeepAlive: %v", err)
		}
		renewed = start
		if _, err := b.Acquire(t.Context(), "renewed", 0); err == nil {
			took := time.Now()
			if took.Sub(renewed) <= leaseTTL {
				t.Fatalf("the waiter took the lock %v after the holder's last renewal started, within its TTL %v", took.Sub(renewed), leaseTTL)
			}
			if err := a.KeepAlive(t.Context()); !errors.Is(err, backends.ErrSessionLost) {
				t.Fatalf("the holder's KeepAlive after a take-over = %v, want ErrSessionLost", err)
			}
			t.Logf("a renewal stalled past the TTL on this loaded machine; the take-over was safe")
			return
		} else if !errors.Is(err, backends.ErrHeld) {
			t.Fatalf("waiter's Acquire: %v, want ErrHeld", err)
		}
	}
	if h, err := waiter.Holder(t.Context(), "renewed"); err != nil || h.ID != "a" || h.Token != tok {
		t.Fatalf("Holder after three TTLs of renewals = %+v, %v; want a under %d", h, err, tok)
	}
}

// TestCrashedHolderIsTakenAfterTTL: a holder that stops renewing (a
// crash) is taken over by a waiter in another process no sooner than a
// TTL after the waiter first read its session, and no later than
// generous bounds allow; the holder's session is then gone for good.
func TestCrashedHolderIsTakenAfterTTL(t *testing.T) {
	srv := dynamotest.Start(t)
	holder, waiter := newBackend(t, srv.Client()), newBackend(t, srv.Client())
	a := backendtest.Open(t, holder, "a", leaseTTL)
	backendtest.Acquire(t, a, "crashed")
	b := backendtest.Open(t, waiter, "b", 30*time.Second)
	first := time.Now() // before the waiter's first read of a's session
	var tok uint64
	testserver.Eventually(t, "the crashed holder's lock taken", 30*time.Second, func() bool {
		got, err := b.Acquire(t.Context(), "crashed", 0)
		if err != nil && !errors.Is(err, backends.ErrHeld) {
			t.Fatalf("waiter's Acquire: %v, want ErrHeld", err)
		}
		tok = uint64(got)
		return err == nil
	})
	if waited := time.Since(first); waited < leaseTTL {
		t.Fatalf("the waiter took the lock %v after its first read, before the TTL %v", waited, leaseTTL)
	}
	if err := a.KeepAlive(t.Context()); !errors.Is(err, backends.ErrSessionLost) {
		t.Fatalf("the crashed holder's KeepAlive = %v, want ErrSessionLost", err)
	}
	if h, err := holder.Holder(t.Context(), "crashed"); err != nil || h.ID != "b" || uint64(h.Token) != tok {
		t.Fatalf("Holder = %+v, %v; want b under %d", h, err, tok)
	}
}
