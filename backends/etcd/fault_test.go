package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/backendtest"
	"github.com/hustings/hustings/backends/etcd/etcdtest"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/testserver"
)

const (
	faultLock = "faults"
	faultTTL  = 2 * time.Second
	// faultMargin is generous: the leader must stop believing before the
	// server frees the lock, even when the test machine is slow.
	faultMargin = 500 * time.Millisecond
)

// cand is one candidate's campaign, with every event it published.
type cand = backendtest.Recorder

// history is every candidate of a test, for the checks at its end.
type history struct {
	mu    sync.Mutex
	cands []*cand
}

// start runs a campaign for id on b until the (sub)test ends.
func (h *history) start(t *testing.T, b backends.Backend, id string, opts ...campaign.Option) *cand {
	t.Helper()
	opts = append([]campaign.Option{
		campaign.WithTTL(faultTTL), campaign.WithSafetyMargin(faultMargin),
		campaign.WithRetry(200 * time.Millisecond),
	}, opts...)
	k := backendtest.Record(t, b, faultLock, id, opts...)
	h.mu.Lock()
	h.cands = append(h.cands, k)
	h.mu.Unlock()
	return k
}

// nth waits up to d for k's n-th event (from 1) of kind and returns it.
func nth(t *testing.T, k *cand, kind events.Kind, n int, d time.Duration) events.Event {
	t.Helper()
	var got events.Event
	testserver.Eventually(t, fmt.Sprintf("%s: %s event #%d", k.ID, kind, n), d, func() bool {
		seen := 0
		for _, e := range k.Events() {
			if e.Kind == kind {
				if seen++; seen == n {
					got = e
					return true
				}
			}
		}
		return false
	})
	return got
}

// term is one holding of the lock by one candidate, as it believed it.
type term struct {
	id         string
	token      events.Token
	start, end time.Time
}

// check fails the test unless, across every candidate: Elected and
// Revoked alternate per candidate with matching tokens, tokens strictly
// increase in the order of election, and no two candidates ever believed
// they led at the same time.
func (h *history) check(t *testing.T) {
	t.Helper()
	var terms []term
	for _, k := range h.cands {
		var open *term
		for _, e := range k.Events() {
			switch {
			case e.Kind == events.Elected && open == nil:
				open = &term{id: k.ID, token: e.Token, start: e.Time, end: time.Unix(math.MaxInt32, 0)}
			case e.Kind == events.Revoked && open != nil && e.Token == open.token:
				open.end = e.Time
				terms = append(terms, *open)
				open = nil
			default:
				t.Errorf("%s: %s out of order; events: %v", k.ID, e, k.Events())
			}
		}
		if open != nil {
			terms = append(terms, *open)
		}
	}
	slices.SortFunc(terms, func(a, b term) int { return a.start.Compare(b.start) })
	for i := 1; i < len(terms); i++ {
		prev, cur := terms[i-1], terms[i]
		if cur.token <= prev.token {
			t.Errorf("token went backwards: %s elected with %d after %s with %d", cur.id, cur.token, prev.id, prev.token)
		}
		if cur.start.Before(prev.end) {
			t.Errorf("%s (token %d) elected at %v while %s (token %d) led until %v",
				cur.id, cur.token, cur.start.Format(time.StampMilli), prev.id, prev.token, prev.end.Format(time.StampMilli))
		}
	}
	t.Logf("%d terms, tokens %v", len(terms), tokensOf(terms))
}

func tokensOf(terms []term) []events.Token {
	var toks []events.Token
	for _, tm := range terms {
		toks = append(toks, tm.token)
	}
	return toks
}

// TestFaults runs campaigns on one lock through a cut link, a server
// restart and a slow link, on one server, and checks at the end that the
// fencing token never went backwards and no two candidates ever believed
// they led at once.
func TestFaults(t *testing.T) {
	srv := etcdtest.Start(t)
	h := &history{}
	defer h.check(t)
	for _, phase := range []struct {
		name string
		run  func(t *testing.T, srv *etcdtest.Server, h *history)
	}{
		{"Blackhole", blackholeLeader},
		{"Restart", restartServer},
		{"Latency", slowLink},
	} {
		if !t.Run(phase.name, func(t *testing.T) { phase.run(t, srv, h) }) {
			return
		}
	}
}

// blackholeLeader: the leader's link is cut; it publishes Revoked while
// the server still holds its lock, a candidate on a direct link is
// elected once the server frees it, and after the link heals the old
// leader campaigns again and wins, with a larger token, when the other
// resigns.
func blackholeLeader(t *testing.T, srv *etcdtest.Server, h *history) {
	link, linked := srv.Linked(t)
	observer := newBackend(t, srv.Client(t))
	contention := make(chan struct{}, 1)
	l := h.start(t, newBackend(t, linked), "blackholed", campaign.WithLogger(slog.New(&onMessage{msg: "lock held by another candidate", ch: contention})))
	first := nth(t, l, events.Elected, 1, 15*time.Second)
	f := h.start(t, newBackend(t, srv.Client(t)), "direct")

	link.Blackhole()
	revoked := nth(t, l, events.Revoked, 1, faultTTL+10*time.Second)
	holder, err := observer.Holder(t.Context(), faultLock)
	if err != nil {
		t.Fatalf("Holder: %v", err)
	}
	if holder.ID != "blackholed" || holder.Token != first.Token {
		t.Fatalf("Holder right after the cut-off leader's Revoked = %+v, want blackholed, %d: the leader must give up before the server frees the lock", holder, first.Token)
	}
	if !errors.Is(revoked.Reason, events.ErrLeaseExpired) || !errors.Is(revoked.Reason, backends.ErrUnavailable) {
		t.Errorf("Revoked reason = %v, want ErrLeaseExpired with backends.ErrUnavailable", revoked.Reason)
	}
	next := nth(t, f, events.Elected, 1, faultTTL+15*time.Second)
	if next.Token <= first.Token {
		t.Fatalf("direct candidate's token %d, want > %d", next.Token, first.Token)
	}

	link.Heal()
	select { // the healed candidate campaigns again, and meets contention
	case <-contention:
	case <-time.After(faultTTL + 15*time.Second):
		t.Fatal("the healed candidate never found the lock held")
	}
	if n := l.Count(events.Elected); n != 1 {
		t.Fatalf("healed candidate elected %d times while the other leads", n)
	}
	f.Stop()
	again := nth(t, l, events.Elected, 2, faultTTL+15*time.Second)
	if again.Token <= next.Token {
		t.Fatalf("healed candidate's new token %d, want > %d", again.Token, next.Token)
	}
}

// restartServer: the server stops for longer than the TTL and restarts on
// the same data; nobody believes it leads during the outage, and the
// campaigns elect a leader again without being restarted, with a larger
// token.
func restartServer(t *testing.T, srv *etcdtest.Server, h *history) {
	a := h.start(t, newBackend(t, srv.Client(t)), "restart-a")
	b := h.start(t, newBackend(t, srv.Client(t)), "restart-b")
	first := elected(t, 15*time.Second, a, b)

	stopped := time.Now()
	srv.Stop()
	for _, k := range []*cand{a, b} {
		testserver.Eventually(t, fmt.Sprintf("%s believes it leads during the outage", k.ID), faultTTL+10*time.Second, func() bool {
			return !k.C.State().Leader
		})
	}
	// Kept as a sleep: the outage lasting past the TTL, with nobody
	// elected in it, is what is tested; nothing happens in it to wait on.
	time.Sleep(time.Until(stopped.Add(faultTTL + time.Second)))
	electedDuring := a.Count(events.Elected) + b.Count(events.Elected)
	if err := srv.Restart(); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	if n := a.Count(events.Elected) + b.Count(events.Elected); n != electedDuring || n != 1 {
		t.Fatalf("%d elections by the end of the outage, want only the one before it", n)
	}
	next := elected(t, 30*time.Second, a, b)
	if next.Token <= first.Token {
		t.Fatalf("token after the restart %d, want > %d", next.Token, first.Token)
	}
}

// slowLink: 100 ms more latency each way on the leader's link, with a
// generous TTL, does not cost it its term.
func slowLink(t *testing.T, srv *etcdtest.Server, h *history) {
	link, linked := srv.Linked(t)
	t.Cleanup(link.Heal) // before the link closes: toxiproxy leaks an active latency toxic's goroutine
	link.Latency(100*time.Millisecond, 0)
	const ttl = 3 * time.Second
	l := h.start(t, newBackend(t, linked), "slow", campaign.WithTTL(ttl), campaign.WithSafetyMargin(ttl/10))
	nth(t, l, events.Elected, 1, 30*time.Second)
	h.start(t, newBackend(t, srv.Client(t)), "fast")
	// Kept as a sleep: the term surviving two TTLs of renewals over the
	// slow link is what is tested; nothing happens in them to wait on.
	time.Sleep(2 * ttl)
	if n := l.Count(events.Revoked); n != 0 {
		t.Fatalf("slow link: %d Revoked events: %v", n, l.Events())
	}
}

// elected waits up to d for a candidate to be elected and returns its
// newest Elected event; the lock must be free of leaders at the call.
func elected(t *testing.T, d time.Duration, cands ...*cand) events.Event {
	t.Helper()
	var got events.Event
	testserver.Eventually(t, "a candidate is elected", d, func() bool {
		for _, k := range cands {
			if s := k.C.State(); s.Leader {
				got = s.LastEvent
				return got.Kind == events.Elected
			}
		}
		return false
	})
	return got
}

// onMessage is a slog.Handler that signals ch (without blocking) at each
// record whose message is msg, at any level.
type onMessage struct {
	msg string
	ch  chan struct{}
}

func (h *onMessage) Enabled(context.Context, slog.Level) bool { return true }
func (h *onMessage) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *onMessage) WithGroup(string) slog.Handler            { return h }
func (h *onMessage) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		select {
		case h.ch <- struct{}{}:
		default:
		}
	}
	return nil
}
