package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/transport/httpapi"
)

// history reads GET /history.
func history(t *testing.T, h *httpapi.Handler) []wireEvent {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/history", nil))
	var es []wireEvent
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("GET /history = %d %q, want 200 application/json", rec.Code, rec.Header().Get("Content-Type"))
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &es); err != nil || es == nil {
		t.Fatalf("GET /history: %q, want a JSON array (%v)", rec.Body, err)
	}
	return es
}

func TestHistoryEmptyWithoutRun(t *testing.T) {
	b := memory.New()
	leader, _ := leaderAndWaiter(t, b) // the waiter is not registered
	h := httpapi.New()
	h.Register(leader)
	if es := history(t, h); len(es) != 0 {
		t.Fatalf("history without Run = %+v, want none", es)
	}
}

// TestRunRecordsHistory: Run records the terms of the sources registered
// before it started and after, each event once, until its context ends; on
// a Handler made by New and on the zero Handler alike.
func TestRunRecordsHistory(t *testing.T) {
	for name, h := range map[string]func() *httpapi.Handler{
		"New":  httpapi.New,
		"zero": func() *httpapi.Handler { return &httpapi.Handler{} },
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { testRunRecordsHistory(t, h()) })
		})
	}
}

func testRunRecordsHistory(t *testing.T, h *httpapi.Handler) {
	b := memory.New()
	leader, waiting := leaderAndWaiter(t, b)
	h.Register(leader)
	ctx, cancel := context.WithCancel(t.Context())
	ran := make(chan error, 1)
	go func() { ran <- h.Run(ctx) }()
	want := []wireEvent{
		{Kind: "elected", Holder: "a"},
		{Kind: "revoked", Holder: "a", Reason: events.ErrResigned.Error()},
		{Kind: "elected", Holder: "z"},
	}
	got := func() []wireEvent {
		var es []wireEvent
		for _, e := range history(t, h) {
			es = append(es, wireEvent{Kind: e.Kind, Holder: e.Holder, Reason: e.Reason})
		}
		return es
	}
	// a's subscription is in place once its Elected is recorded. z's may
	// begin after z is elected: it then begins with that state.
	settled(t, "a's election in the history", func() bool { return slices.Equal(got(), want[:1]) })
	h.Register(waiting) // once Run has subscribed to a: while it waits for more
	if err := leader.Resign(t.Context()); err != nil {
		t.Fatal(err)
	}
	// The sources are recorded side by side: a's Revoked and z's Elected
	// may be recorded in either order.
	settled(t, "the handover in the history, each event once", func() bool {
		es := got()
		return len(es) == len(want) && !slices.ContainsFunc(want, func(w wireEvent) bool { return !slices.Contains(es, w) })
	})
	cancel()
	select {
	case err := <-ran:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Run = %v, want context.Canceled", err)
		}
	case <-time.After(patience):
		t.Fatal("Run still running after its context ended")
	}
}

// settled fails the test unless cond holds once every goroutine of the
// test's bubble is blocked: all that was due has happened.
func settled(t *testing.T, what string, cond func() bool) {
	t.Helper()
	synctest.Wait()
	if !cond() {
		t.Fatalf("%s: not so once the bubble settled", what)
	}
}

// watched is a Source that hands out the contexts it was subscribed with.
type watched struct {
	httpapi.Source
	subs chan context.Context
}

func (w watched) Subscribe(ctx context.Context) <-chan events.Event {
	w.subs <- ctx
	return w.Source.Subscribe(ctx)
}

// Run lets a source go once it is unregistered: a process that registers
// and unregisters campaigns as they come and go must not keep a
// subscription (and a goroutine) for each one it ever had.
func TestRunUnsubscribesUnregistered(t *testing.T) {
	b := memory.New()
	leader, _ := leaderAndWaiter(t, b)
	src := &watched{Source: leader, subs: make(chan context.Context, 1)}
	h := httpapi.New()
	h.Register(src)
	ctx, cancel := context.WithCancel(t.Context())
	ran := make(chan error, 1)
	go func() { ran <- h.Run(ctx) }()
	defer func() { cancel(); <-ran }()
	var sub context.Context
	select {
	case sub = <-src.subs:
	case <-time.After(patience):
		t.Fatal("Run did not subscribe to the registered source")
	}
	h.Unregister(src)
	select {
	case <-sub.Done():
	case <-time.After(patience):
		t.Fatal("Run still subscribed to a source unregistered")
	}
	h.Register(src) // and registered again: subscribed again
	select {
	case <-src.subs:
	case <-time.After(patience):
		t.Fatal("Run did not subscribe to the source registered again")
	}
}
