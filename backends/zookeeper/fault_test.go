package zookeeper_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/backendtest"
	"github.com/hustings/hustings/backends/zookeeper/zktest"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/faultlink"
	"github.com/hustings/hustings/internal/testserver"
)

// TestBlackholedLeader: the leader's link goes silent. It revokes its term
// at its local deadline, before the server expires its session (2 s) and
// deletes its nodes; only then is the waiting candidate, on a direct link,
// elected. The safety margin (700 ms) leaves room for a loaded machine's
// scheduling delays. When the link heals the old leader's client finds its
// session expired, opens a new one, and is elected again, with a larger
// token, once the other resigns.
func TestBlackholedLeader(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a ZooKeeper session to expire and a client to reconnect (~4 s)")
	}
	srv := server(t)
	link := faultlink.NewLink(t, srv.Addr())
	const timeoutA, timeoutB = 2 * time.Second, 2 * time.Second
	connA, connB := dial(t, link.Addr(), timeoutA), dial(t, srv.Addr(), timeoutB)
	ba, bb := newBackend(t, connA, timeoutA), newBackend(t, connB, timeoutB)
	expired := sessionEnd(t, connA, connB) // when the server expires a's ZooKeeper session

	a := backendtest.Record(t, ba, "job", "a", campaign.WithTTL(timeoutA),
		campaign.WithSafetyMargin(700*time.Millisecond), campaign.WithRetry(200*time.Millisecond))
	first := a.WaitFor(t, events.Elected, 10*time.Second)
	b := backendtest.Record(t, bb, "job", "b", campaign.WithTTL(timeoutB), campaign.WithRetry(200*time.Millisecond))
	waitUntil(t, "b queued behind a", func() bool { return lineLength(t, connB, "job") == 2 })

	cut := time.Now()
	link.Blackhole()
	revoked := a.WaitFor(t, events.Revoked, 5*time.Second)
	if !errors.Is(revoked.Reason, events.ErrLeaseExpired) {
		t.Errorf("a revoked for %v, want the deadline (unreachable or lease expired)", revoked.Reason)
	}
	if late := revoked.Time.Sub(cut); late > timeoutA+500*time.Millisecond {
		t.Errorf("a revoked %v after its link went silent, want within its TTL %v", late, timeoutA)
	}
	elected := b.WaitFor(t, events.Elected, 15*time.Second)
	if elected.Token <= first.Token {
		t.Errorf("b's token %d, want > a's %d", elected.Token, first.Token)
	}
	var gone time.Time
	select {
	case gone = <-expired:
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not expire a's ZooKeeper session within 10 s")
	}
	if !revoked.Time.Before(gone) {
		t.Errorf("a revoked at %v, after the server expired its session at %v", revoked.Time, gone)
	}
	t.Logf("link cut: a revoked after %v, b elected after %v, the server expired a's session after %v",
		revoked.Time.Sub(cut), elected.Time.Sub(cut), gone.Sub(cut))
	link.Heal()
	b.Stop() // releases the lock; a gets it once its client is back
	again := a.WaitFor(t, events.Elected, 30*time.Second)
	if again.Token <= elected.Token {
		t.Errorf("a's token after the heal %d, want > b's %d", again.Token, elected.Token)
	}
	t.Logf("a elected again %v after the heal", again.Time.Sub(elected.Time))
	checkHistory(t, a, b)
}

// TestServerRestart: the server is killed and started again (same data).
// During the outage KeepAlive fails instead of succeeding from cached
// state, and the leader revokes at its deadline; after the restart the
// campaigns recover in the same process and elect a leader with a larger
// token, and nobody believed it led across the outage.
func TestServerRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts a ZooKeeper server (~8 s)")
	}
	srv := zktest.Start(t) // its own: this test kills it
	const timeout = 2 * time.Second
	ba := newBackend(t, dial(t, srv.Addr(), timeout), timeout)
	connB := dial(t, srv.Addr(), timeout)
	bb := newBackend(t, connB, timeout)
	opts := []campaign.Option{campaign.WithTTL(timeout), campaign.WithRetry(200 * time.Millisecond)}
	a := backendtest.Record(t, ba, "job", "a", opts...)
	first := a.WaitFor(t, events.Elected, 10*time.Second)
	b := backendtest.Record(t, bb, "job", "b", opts...)
	probe, err := bb.Open(t.Context(), "probe", timeout)
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "b waits in the lock's line behind a", func() bool { return lineLength(t, connB, "job") == 2 })

	down := time.Now()
	srv.Stop()
	waitUntil(t, "b's client noticed the server is down", func() bool { return connB.State() != zk.StateHasSession })
	if err := probe.KeepAlive(t.Context()); !errors.Is(err, backends.ErrUnavailable) {
		t.Errorf("KeepAlive while the server is down: %v, want ErrUnavailable", err)
	}
	revoked := a.WaitFor(t, events.Revoked, 5*time.Second)
	if late := revoked.Time.Sub(down); late > timeout+500*time.Millisecond {
		t.Errorf("a revoked %v after the server went down, want within its TTL %v", late, timeout)
	}
	// Kept as a sleep: an outage longer than the TTL is what is tested
	// (the probe's session must be lost by it); nothing happens in it to
	// wait on.
	time.Sleep(time.Until(down.Add(timeout + time.Second)))
	restart := time.Now()
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	up := time.Now()
	if err := probe.KeepAlive(t.Context()); !errors.Is(err, backends.ErrSessionLost) && !errors.Is(err, backends.ErrUnavailable) {
		t.Errorf("KeepAlive after an outage longer than the TTL: %v, want ErrSessionLost (or ErrUnavailable while reconnecting)", err)
	}
	_ = probe.Close(t.Context())

	next := electedAfter(t, down, 30*time.Second, a, b)
	if next.Time.Before(restart) {
		t.Errorf("%s elected at %v, while the server was down", next.Holder, next.Time)
	}
	if next.Token <= first.Token {
		t.Errorf("token after the restart %d, want > %d", next.Token, first.Token)
	}
	t.Logf("server down: a revoked after %v; restart began after %v, took %v; %s elected %v after the server went down",
		revoked.Time.Sub(down), restart.Sub(down), up.Sub(restart), next.Holder, next.Time.Sub(down))
	for _, tm := range checkHistory(t, a, b) {
		if tm.start.Before(down) && tm.end.After(up) {
			t.Errorf("%s believed it led (token %d) across the outage, until %v", tm.id, tm.token, tm.end)
		}
	}
}

// TestLatencyNoSpuriousRevoke: 100 ms more each way on the leader's link,
// with a generous TTL, costs it nothing: it keeps leading, and the other
// candidate is never elected.
func TestLatencyNoSpuriousRevoke(t *testing.T) {
	if testing.Short() {
		t.Skip("watches a campaign for 5 s")
	}
	srv := server(t)
	link := faultlink.NewLink(t, srv.Addr())
	link.Latency(100*time.Millisecond, 0)
	const timeout = 4 * time.Second
	ba := newBackend(t, dial(t, link.Addr(), timeout), timeout)
	bb := newBackend(t, dial(t, srv.Addr(), timeout), timeout)
	opts := []campaign.Option{campaign.WithTTL(timeout), campaign.WithRetry(200 * time.Millisecond)}
	a := backendtest.Record(t, ba, "job", "a", opts...)
	a.WaitFor(t, events.Elected, 15*time.Second)
	b := backendtest.Record(t, bb, "job", "b", opts...)
	// Kept as a sleep: that a keeps leading through almost four
	// keep-alives under latency is what is tested; nothing happens in
	// them to wait on.
	time.Sleep(5 * time.Second)
	if n := a.Count(events.Revoked); n > 0 {
		t.Errorf("a was revoked %d times under 100 ms latency: %v", n, a.Events())
	}
	if n := b.Count(events.Elected); n > 0 {
		t.Errorf("b was elected %d times while a led: %v", n, b.Events())
	}
	if !a.C.State().Leader {
		t.Errorf("a does not lead after 5 s of latency: %+v", a.C.State())
	}
	checkHistory(t, a, b)
}

// sessionEnd creates an ephemeral node on conn and watches it from
// observer: the channel receives the time the server deleted it, that is
// when it expired conn's ZooKeeper session.
func sessionEnd(t *testing.T, conn, observer *zk.Conn) <-chan time.Time {
	t.Helper()
	p := fmt.Sprintf("/session-probe-%x", time.Now().UnixNano())
	if _, err := conn.Create(p, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	_, _, ev, err := observer.GetW(p)
	if err != nil {
		t.Fatal(err)
	}
	at := make(chan time.Time, 1)
	go func() { // ends when the node goes or observer closes
		if e := <-ev; e.Type == zk.EventNodeDeleted {
			at <- time.Now()
		}
	}()
	return at
}

// electedAfter returns the first Elected event published after since by
// any of the candidates.
func electedAfter(t *testing.T, since time.Time, timeout time.Duration, cands ...*candidate) events.Event {
	t.Helper()
	var got events.Event
	testserver.EventuallyNil(t, timeout, func() error {
		for _, k := range cands {
			for _, e := range k.Events() {
				if e.Kind == events.Elected && e.Time.After(since) {
					got = e
					return nil
				}
			}
		}
		var states []string
		for _, k := range cands {
			states = append(states, fmt.Sprintf("%s: state %+v", k.ID, k.C.State()))
		}
		return fmt.Errorf("nobody elected; %v", states)
	})
	return got
}
