package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/group"
	"github.com/hustings/hustings/transport/httpapi"
)

// leaderAndWaiter runs two campaigns for "nightly" on b: the first leads
// (it is elected before the second starts), the second waits.
func leaderAndWaiter(t *testing.T, b *memory.Backend) (leader, waiting *campaign.Campaign) {
	t.Helper()
	leader, err := campaign.New(b, "nightly", opts("a")...)
	if err != nil {
		t.Fatal(err)
	}
	start(t, leader)
	elected(t, leader)
	waiting, err = campaign.New(b, "nightly", opts("z")...)
	if err != nil {
		t.Fatal(err)
	}
	start(t, waiting)
	return leader, waiting
}

// opts keep renewals (which move the deadline) out of the tests' way.
func opts(id string) []campaign.Option {
	return []campaign.Option{campaign.WithID(id), campaign.WithTTL(time.Minute)}
}

func TestSnapshotMatchesState(t *testing.T) {
	b := memory.New()
	leader, waiting := leaderAndWaiter(t, b)
	slot, err := group.New(b, "pollers", 2, opts("g")...)
	if err != nil {
		t.Fatal(err)
	}
	start(t, slot)
	elected(t, slot)

	h := httpapi.New()
	sources := []httpapi.Source{leader, waiting, slot}
	for _, s := range sources {
		h.Register(s)
	}
	var want []any
	for _, s := range sources {
		want = append(want, stateJSON(s.State()))
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/campaigns", nil))

	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("GET /campaigns = %d %q, want 200 application/json", rec.Code, rec.Header().Get("Content-Type"))
	}
	var got []any
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatalf("decoding %s: %v", rec.Body, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("snapshot\n got %v\nwant %v", got, want)
	}
	if st := leader.State(); !st.Leader || waiting.State().Leader || !slot.State().Leader {
		t.Fatal("test setup: want a and g leading, z waiting")
	}
}

// stateJSON is the JSON a snapshot of st should decode to, written out by
// hand so that the field names are checked too.
func stateJSON(st campaign.State) map[string]any {
	m := map[string]any{
		"name":    st.Name,
		"id":      st.ID,
		"leader":  st.Leader,
		"slot":    float64(st.Slot),
		"token":   float64(st.Token),
		"dropped": float64(st.Dropped),
	}
	if st.Leader {
		m["holder"] = st.ID
	}
	if !st.Deadline.IsZero() {
		m["deadline"] = st.Deadline.Format(time.RFC3339Nano)
	}
	if st.Err != nil {
		m["error"] = st.Err.Error()
	}
	if e := st.LastEvent; e.Kind != 0 {
		le := map[string]any{
			"kind":  e.Kind.String(),
			"name":  e.Name,
			"slot":  float64(e.Slot),
			"token": float64(e.Token),
			"time":  e.Time.Format(time.RFC3339Nano),
		}
		if e.Holder != "" {
			le["holder"] = e.Holder
		}
		if !e.Deadline.IsZero() {
			le["deadline"] = e.Deadline.Format(time.RFC3339Nano)
		}
		if e.Reason != nil {
			le["reason"] = e.Reason.Error()
		}
		m["last_event"] = le
	}
	return m
}

func TestStreamElectedThenRevoked(t *testing.T) {
	tests := []struct {
		name string
		stop func(*campaign.Campaign, context.Context) error
		end  bool // the stream ends after Revoked: its only source ended
	}{
		{"resign", (*campaign.Campaign).Resign, false},
		{"close", func(c *campaign.Campaign, _ context.Context) error { return c.Close() }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := campaign.New(memory.New(), "nightly", opts("a")...)
			if err != nil {
				t.Fatal(err)
			}
			start(t, c)
			won := elected(t, c)
			h := httpapi.New()
			h.Register(c)
			srv := httptest.NewServer(h)
			defer srv.Close()

			ctx, cancel := context.WithTimeout(t.Context(), patience)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/events", nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
				t.Fatalf("GET /events = %d %q, want 200 text/event-stream", resp.StatusCode, ct)
			}
			sc := bufio.NewScanner(resp.Body)

			e := expect(t, sc, "elected")
			if e.Token != won.Token || e.Holder != "a" || e.Name != "nightly" || e.Deadline.IsZero() {
				t.Fatalf("elected = %+v, want token %d held by a", e, won.Token)
			}
			if err := tt.stop(c, ctx); err != nil {
				t.Fatalf("stop: %v", err)
			}
			e = expect(t, sc, "revoked")
			if e.Token != won.Token || e.Reason != events.ErrResigned.Error() {
				t.Fatalf("revoked = %+v, want token %d, reason %q", e, won.Token, events.ErrResigned)
			}
			if tt.end {
				if e, ok := next(t, sc); ok {
					t.Fatalf("got %+v after the source ended, want the end of the stream", e)
				}
			}
		})
	}
}

// expect reads the next event and checks its kind.
func expect(t *testing.T, sc *bufio.Scanner, kind string) wireEvent {
	t.Helper()
	raw, ok := next(t, sc)
	if !ok || raw.event != kind {
		t.Fatalf("next event = %+v (ok %v), want %s", raw, ok, kind)
	}
	var e wireEvent
	if err := json.Unmarshal([]byte(raw.data), &e); err != nil {
		t.Fatalf("decoding %q: %v", raw.data, err)
	}
	if e.Kind != kind {
		t.Fatalf("data kind %q under event %q", e.Kind, kind)
	}
	return e
}

func TestClientGoneEndsStream(t *testing.T) {
	b := memory.New()
	leader, waiting := leaderAndWaiter(t, b)
	h := httpapi.New()
	h.Register(leader)
	h.Register(waiting)

	ctx, cancel := context.WithCancel(t.Context())
	rec := httptest.NewRecorder()
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, http.MethodGet, "/events", nil))
	}()
	cancel()
	select {
	case <-done:
	case <-time.After(patience):
		t.Fatal("ServeHTTP still streaming after the client went")
	}
}

func TestStreamWithoutSourcesEnds(t *testing.T) {
	rec := httptest.NewRecorder()
	httpapi.New().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/events", nil))
	if rec.Code != http.StatusOK || rec.Body.Len() != 0 {
		t.Fatalf("GET /events with no source = %d %q, want 200 and no events", rec.Code, rec.Body)
	}
}

func TestRoutes(t *testing.T) {
	tests := []struct {
		method, path string
		code         int
	}{
		{http.MethodGet, "/", http.StatusOK},
		{http.MethodGet, "/campaigns", http.StatusOK},
		{http.MethodPost, "/", http.StatusMethodNotAllowed},
		{http.MethodPost, "/campaigns", http.StatusMethodNotAllowed},
		{http.MethodDelete, "/campaigns", http.StatusMethodNotAllowed},
		{http.MethodPost, "/events", http.StatusMethodNotAllowed},
		{http.MethodGet, "/history", http.StatusOK},
		{http.MethodPost, "/history", http.StatusMethodNotAllowed},
		{http.MethodGet, "/resign", http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			rec := httptest.NewRecorder()
			httpapi.New().ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, nil))
			if rec.Code != tt.code {
				t.Fatalf("code = %d, want %d", rec.Code, tt.code)
			}
			if tt.code == http.StatusMethodNotAllowed {
				if allow := rec.Header().Get("Allow"); allow != http.MethodGet {
					t.Fatalf("Allow = %q, want GET", allow)
				}
				if !strings.Contains(rec.Body.String(), "read-only") {
					t.Fatalf("405 body %q does not say read-only", rec.Body)
				}
			}
		})
	}
}

func TestRegisterUnregister(t *testing.T) {
	a, err := campaign.New(memory.New(), "a", campaign.WithID("a"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, a) })
	z, err := campaign.New(memory.New(), "z", campaign.WithID("z"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, z) })
	h := httpapi.New()
	names := func() []string {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		var snaps []wireSnapshot
		if err := json.Unmarshal(rec.Body.Bytes(), &snaps); err != nil {
			t.Fatalf("decoding %s: %v", rec.Body, err)
		}
		if snaps == nil {
			t.Fatalf("body %q, want a JSON array", rec.Body)
		}
		var ns []string
		for _, s := range snaps {
			ns = append(ns, s.Name)
		}
		return ns
	}
	steps := []struct {
		name string
		do   func()
		want []string
	}{
		{"empty", func() {}, nil},
		{"nil ignored", func() { h.Register(nil) }, nil},
		{"in order", func() { h.Register(z); h.Register(a) }, []string{"z", "a"}},
		{"duplicate ignored", func() { h.Register(z) }, []string{"z", "a"}},
		{"unregister", func() { h.Unregister(z) }, []string{"a"}},
		{"unregister unknown", func() { h.Unregister(z) }, []string{"a"}},
	}
	for _, s := range steps {
		s.do()
		if got := names(); !reflect.DeepEqual(got, s.want) {
			t.Fatalf("%s: names = %q, want %q", s.name, got, s.want)
		}
	}
}

func TestConcurrentUse(t *testing.T) {
	c, err := campaign.New(memory.New(), "x")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, c) })
	h := httpapi.New()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 50 {
				h.Register(c)
				h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
				h.Unregister(c)
			}
		})
	}
	wg.Wait()
}
