package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/hustings/hustings/backends/backendtest"
	"github.com/hustings/hustings/backends/postgres/pgtest"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/faultlink"
	"github.com/hustings/hustings/internal/testserver"
)

// Fault-test timing: short TTLs, generous waits.
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

// TestFaults runs the fault scenarios one after another on one server and
// one lock name, and checks that the fencing token never went backwards
// across all of them, the crash and the immediate shutdowns included.
func TestFaults(t *testing.T) {
	srv := pgtest.Start(t)
	var elected []events.Event
	for _, f := range []struct {
		name string
		run  func(t *testing.T, srv *pgtest.Server) []*backendtest.Recorder
	}{
		{"BlackholedLeader", blackholedLeader},
		{"ServerRestart", serverRestart},
		{"Latency", latency},
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

// blackholedLeader: the leader's link (its pool and its listener) goes
// dark. It publishes Revoked at its local deadline, while its rows still
// live on the server; a candidate on a direct link is elected once they
// expired, with a larger token. When the link heals, the old leader
// campaigns again and wins, with a larger token still, once the other one
// stops.
func blackholedLeader(t *testing.T, srv *pgtest.Server) []*backendtest.Recorder {
	link := faultlink.NewLink(t, srv.Addr())
	viaLink := newBackend(t, pgtest.DSN(link.Addr()))
	direct := newBackend(t, srv.DSN())
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

// serverRestart: the server crashes (SIGKILL) and comes back after an
// outage longer than the TTL, then shuts down immediately (SIGQUIT) and
// comes back at once. The data is durable, the clock the server's:
// after the long outage every session has expired and the campaigns,
// still in the same process, open new ones and elect a leader with a
// larger token; after the quick one the sessions may live on, and a
// leader is there again within the TTL and a retry.
func serverRestart(t *testing.T, srv *pgtest.Server) []*backendtest.Recorder {
	const name = faultLock
	a := backendtest.Record(t, newBackend(t, srv.DSN()), name, "a", faultOpts()...)
	b := backendtest.Record(t, newBackend(t, srv.DSN()), name, "b", faultOpts()...)
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

	if err := srv.Restart(); err != nil { // immediate shutdown, back at once
		t.Fatal(err)
	}
	testserver.EventuallyNil(t, faultWait, func() error {
		if !a.C.State().Leader && !b.C.State().Leader {
			return errors.New("no leader after the quick restart")
		}
		return nil
	})
	return []*backendtest.Recorder{a, b}
}

// electedOf waits for one of ks to publish Elected and returns it.
func electedOf(t *testing.T, ks ...*backendtest.Recorder) (*backendtest.Recorder, events.Event) {
	t.Helper()
	var got *backendtest.Recorder
	testserver.EventuallyNil(t, faultWait, func() error {
		for _, k := range ks {
			if k.Pending() {
				got = k
				return nil
			}
		}
		return errors.New("nobody elected")
	})
	return got, got.Expect(t, events.Elected, 0)
}

// latency: 100 ms added each way on the leader's link, with a TTL of
// seconds, revokes nothing.
func latency(t *testing.T, srv *pgtest.Server) []*backendtest.Recorder {
	link := faultlink.NewLink(t, srv.Addr())
	link.Latency(100*time.Millisecond, 0)
	const name = faultLock
	opts := []campaign.Option{campaign.WithTTL(3 * time.Second), campaign.WithRetry(200 * time.Millisecond)}
	a := backendtest.Record(t, newBackend(t, pgtest.DSN(link.Addr())), name, "a", opts...)
	first := a.Expect(t, events.Elected, faultWait)
	b := backendtest.Record(t, newBackend(t, srv.DSN()), name, "b", opts...)
	a.Quiet(t, 5*time.Second)
	b.Quiet(t, 0)
	if s := a.C.State(); !s.Leader || s.Token != first.Token {
		t.Fatalf("a's state after 5s of latency = %+v, want leading with token %d", s, first.Token)
	}
	return []*backendtest.Recorder{a, b}
}

// logTerms logs every event, for the record of a run.
func logTerms(t *testing.T, ks ...*backendtest.Recorder) {
	for _, k := range ks {
		for _, e := range k.Events() {
			t.Logf("%s %s %s", e.Time.Format("15:04:05.000"), k.ID, e)
		}
	}
}
