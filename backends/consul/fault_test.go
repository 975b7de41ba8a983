package consul_test

import (
	"errors"
	"testing"
	"time"

	"github.com/hustings/hustings/backends/backendtest"
	"github.com/hustings/hustings/backends/consul"
	"github.com/hustings/hustings/backends/consul/consultest"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/faultlink"
	"github.com/hustings/hustings/internal/testserver"
)

// Fault-test timing: short TTLs, generous waits. Consul invalidates a
// session up to twice its TTL after its last renewal.
const (
	faultTTL    = 3 * time.Second
	faultMargin = time.Second      // room for the test to look at the server before the session expires
	faultWait   = 30 * time.Second // bound on anything that must happen
)

func faultOpts() []campaign.Option {
	return []campaign.Option{
		campaign.WithTTL(faultTTL),
		campaign.WithSafetyMargin(faultMargin),
		campaign.WithRetry(200 * time.Millisecond),
		campaign.WithGrace(time.Second),
	}
}

// newBackendAt returns a Backend on a new client of the HTTP API at addr.
func newBackendAt(t testing.TB, addr string) *consul.Backend {
	t.Helper()
	c, err := consultest.NewClient(addr)
	if err != nil {
		t.Fatal(err)
	}
	b, err := consul.New(c)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestFaults runs the fault scenarios one after another on one durable
// server and one lock name, and checks that the fencing token never went
// backwards across all of them, the crashes included.
func TestFaults(t *testing.T) {
	srv := consultest.Start(t, consultest.Durable())
	var elected []events.Event
	for _, f := range []struct {
		name string
		run  func(t *testing.T, srv *consultest.Server) []*backendtest.Recorder
	}{
		{"BlackholedLeader", blackholedLeader},
		{"ServerRestart", serverRestart},
		{"Latency", latency},
		{"ServerPaused", serverPaused},
	} {
		t.Run(f.name, func(t *testing.T) {
			ks := f.run(t, srv)
			backendtest.CheckPairs(t, ks...)
			logTerms(t, ks...)
			for _, k := range ks {
				k.Stop()
				elected = append(elected, k.Elected()...)
			}
		})
	}
	backendtest.CheckTokens(t, elected)
}

// faultLock is the lock every fault scenario campaigns for.
const faultLock = "faults"

// blackholedLeader: the leader's link goes dark. It publishes Revoked at
// its local deadline, while its session and lock still live on the
// server; a candidate on a direct link is elected once Consul
// invalidated the session, with a larger token. When the link heals, the
// old leader campaigns again and wins, with a larger token still, once
// the other one stops.
func blackholedLeader(t *testing.T, srv *consultest.Server) []*backendtest.Recorder {
	link := faultlink.NewLink(t, srv.Addr())
	viaLink := newBackendAt(t, link.Addr())
	direct := newBackend(t, srv)
	const name = faultLock

	a := backendtest.Record(t, viaLink, name, "a", faultOpts()...)
	first := a.Expect(t, events.Elected, faultWait)
	b := backendtest.Record(t, direct, name, "b", faultOpts()...)

	link.Blackhole()
	revoked := a.Expect(t, events.Revoked, faultTTL+faultWait)
	if h, err := direct.Holder(t.Context(), name); err != nil || h.ID != "a" || h.Token != first.Token {
		t.Fatalf("Holder when a published Revoked = %+v, %v; want a's lock still alive on the server (a, %d)", h, err, first.Token)
	}
	if !errors.Is(revoked.Reason, events.ErrLeaseExpired) {
		t.Errorf("a revoked with reason %v, want unreachable or lease expired", revoked.Reason)
	}
	second := b.Expect(t, events.Elected, faultWait)
	if !second.Time.After(revoked.Time) {
		t.Fatalf("b elected at %v, before a's Revoked at %v", second.Time, revoked.Time)
	}

	link.Heal()
	b.Stop()
	third := a.Expect(t, events.Elected, faultWait)
	if third.Token <= second.Token {
		t.Fatalf("a's token after the heal = %d, want > %d", third.Token, second.Token)
	}
	return []*backendtest.Recorder{a, b}
}

// serverPaused: the server stops (SIGSTOP) for longer than the TTL, its
// connections open and silent. The leader publishes Revoked at its
// deadline; nobody is elected while the server is stopped. Once it runs
// again, it invalidates the sessions whose TTL ran out: a leader is
// elected again with a larger token.
func serverPaused(t *testing.T, srv *consultest.Server) []*backendtest.Recorder {
	const name = faultLock
	a := backendtest.Record(t, newBackend(t, srv), name, "a", faultOpts()...)
	b := backendtest.Record(t, newBackend(t, srv), name, "b", faultOpts()...)
	leader, first := electedOf(t, a, b)
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Resume() })
	leader.Expect(t, events.Revoked, faultTTL+faultWait)
	// Kept as a sleep: the server stalled for longer than the TTL is
	// what is tested; nothing happens in it to wait on, and nobody may be
	// elected.
	time.Sleep(faultTTL)
	for _, k := range []*backendtest.Recorder{a, b} {
		if s := k.C.State(); s.Leader {
			t.Fatalf("%s believes it leads while the server is stopped", k.ID)
		}
	}
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	_, second := electedOf(t, a, b)
	if second.Token <= first.Token {
		t.Fatalf("token after the pause = %d, want > %d", second.Token, first.Token)
	}
	return []*backendtest.Recorder{a, b}
}

// latency: 100 ms added each way on the leader's link, with a TTL of
// seconds, revokes nothing.
func latency(t *testing.T, srv *consultest.Server) []*backendtest.Recorder {
	link := faultlink.NewLink(t, srv.Addr())
	link.Latency(100*time.Millisecond, 0)
	const name = faultLock
	opts := []campaign.Option{campaign.WithTTL(3 * time.Second), campaign.WithRetry(200 * time.Millisecond)}
	a := backendtest.Record(t, newBackendAt(t, link.Addr()), name, "a", opts...)
	first := a.Expect(t, events.Elected, faultWait)
	b := backendtest.Record(t, newBackend(t, srv), name, "b", opts...)
	a.Quiet(t, 5*time.Second)
	b.Quiet(t, 0)
	if s := a.C.State(); !s.Leader || s.Token != first.Token {
		t.Fatalf("a's state after 5s of latency = %+v, want leading with token %d", s, first.Token)
	}
	return []*backendtest.Recorder{a, b}
}

// serverRestart: the server crashes (SIGKILL) and comes back from its
// disk after an outage longer than the TTL, then crashes again and comes
// back at once. Consul gives every session a fresh TTL when a server
// becomes leader, so the sessions may live on; the campaigns, still in
// the same process, elect a leader with a larger token, within the TTL
// and a retry of the server's return.
func serverRestart(t *testing.T, srv *consultest.Server) []*backendtest.Recorder {
	const name = faultLock
	a := backendtest.Record(t, newBackend(t, srv), name, "a", faultOpts()...)
	b := backendtest.Record(t, newBackend(t, srv), name, "b", faultOpts()...)
	leader, first := electedOf(t, a, b)

	srv.Kill()
	leader.Expect(t, events.Revoked, faultTTL+faultWait)
	// Kept as a sleep: the outage lasting longer than the TTL is what is
	// tested; nothing happens in it to wait on, and nobody may be elected.
	time.Sleep(faultTTL)
	for _, k := range []*backendtest.Recorder{a, b} {
		if s := k.C.State(); s.Leader {
			t.Fatalf("%s believes it leads while the server is down", k.ID)
		}
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	_, second := electedOf(t, a, b)
	if second.Token <= first.Token {
		t.Fatalf("token after the restart = %d, want > %d", second.Token, first.Token)
	}

	if err := srv.Restart(); err != nil { // a crash, back at once
		t.Fatal(err)
	}
	testserver.Eventually(t, "a leader after the quick restart", faultWait, func() bool {
		return a.C.State().Leader || b.C.State().Leader
	})
	return []*backendtest.Recorder{a, b}
}

// TestServerRestart: the server crashes (SIGKILL) and comes back after an
// outage longer than the TTL, empty (a dev agent keeps nothing), then
// crashes and comes back at once. The campaigns publish Revoked; the
// backends, their feeds included, work on with the new server: new
// campaigns on them elect a leader, and a release wakes the waiter. The
// raft index starts over with the state, and tokens with it (what a
// cluster that lost its data does; doc.go says so), so a campaign that
// lived across the loss would see its token go back: the campaigns of
// each life of the server are new ones.
func TestServerRestart(t *testing.T) {
	srv := consultest.Start(t)
	const name = faultLock
	ba, bb := newBackend(t, srv), newBackend(t, srv)
	a := backendtest.Record(t, ba, name, "a", faultOpts()...)
	b := backendtest.Record(t, bb, name, "b", faultOpts()...)
	leader, _ := electedOf(t, a, b)

	srv.Kill()
	leader.Expect(t, events.Revoked, faultTTL+faultWait)
	// Kept as a sleep: the outage lasting longer than the TTL is what is
	// tested; nothing happens in it to wait on, and nobody may be elected.
	time.Sleep(faultTTL)
	for _, k := range []*backendtest.Recorder{a, b} {
		if s := k.C.State(); s.Leader {
			t.Fatalf("%s believes it leads while the server is down", k.ID)
		}
	}
	a.Stop()
	b.Stop()
	for range 2 { // after the long outage, then a crash back at once
		if err := srv.Restart(); err != nil {
			t.Fatal(err)
		}
		a = backendtest.Record(t, ba, name, "a", faultOpts()...)
		a.Expect(t, events.Elected, faultWait)
		b = backendtest.Record(t, bb, name, "b", faultOpts()...)
		b.Quiet(t, 0)
		a.Stop() // a graceful release: b is woken, not only polled
		b.Expect(t, events.Elected, faultWait)
		backendtest.CheckPairs(t, a, b)
		logTerms(t, a, b)
		b.Stop()
	}
}

// TestOverwrittenLockIsPushed: a write to a held lock's key behind its
// holder (an operator's `consul kv put`) revokes the holder through the
// feed, long before its next keep-alive would find it (consul#18271:
// api.Lock notices such a loss only when its session check comes round).
func TestOverwrittenLockIsPushed(t *testing.T) {
	srv := consultest.Start(t)
	b := newBackend(t, srv)
	const ttl = time.Minute // a keep-alive every 20 s
	a := backendtest.Record(t, b, "overwritten", "a", campaign.WithTTL(ttl))
	a.Expect(t, events.Elected, faultWait)
	c := client(t, srv)
	kv, _, err := c.KV().Get(b.LockKey("overwritten"), nil)
	if err != nil || kv == nil {
		t.Fatalf("lock key: %v, %v", kv, err)
	}
	kv.Value = []byte(`{"id":"operator"}`)
	if _, err := c.KV().Put(kv, nil); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	a.Expect(t, events.Revoked, 10*time.Second)
	t.Logf("revoked %v after the write", time.Since(start))
	a.Stop()
}

// electedOf waits for one of ks to publish Elected and returns it.
func electedOf(t *testing.T, ks ...*backendtest.Recorder) (*backendtest.Recorder, events.Event) {
	t.Helper()
	var got *backendtest.Recorder
	testserver.Eventually(t, "somebody elected", faultWait, func() bool {
		for _, k := range ks {
			if k.Pending() {
				got = k
				return true
			}
		}
		return false
	})
	return got, got.Expect(t, events.Elected, 0)
}

// logTerms logs every event, for the record of a run.
func logTerms(t *testing.T, ks ...*backendtest.Recorder) {
	for _, k := range ks {
		for _, e := range k.Events() {
			t.Logf("%s %s %s", e.Time.Format("15:04:05.000"), k.ID, e)
		}
	}
}
