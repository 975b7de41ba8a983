package fence_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/fence"
)

func write(context.Context) error { return nil }

// A write is admitted under the highest token seen or a higher one, never
// a lower one, and never token 0; each lock keeps its own.
func TestGuardOrdersTokens(t *testing.T) {
	var g fence.Guard
	for i, step := range []struct {
		lock  string
		token events.Token
		ok    bool
	}{
		{"a", 5, true}, {"a", 5, true}, {"a", 7, true}, {"a", 5, false}, {"a", 6, false},
		{"a", 7, true}, {"b", 1, true}, {"a", 0, false}, {"b", 0, false}, {"a", 8, true},
	} {
		err := g.Do(t.Context(), step.lock, step.token, write)
		if step.ok != (err == nil) || (err != nil && !errors.Is(err, backends.ErrNotHeld)) {
			t.Fatalf("step %d: write to %s under %d = %v; want admitted %v (else ErrNotHeld)", i, step.lock, step.token, err, step.ok)
		}
	}
	if err := g.Do(t.Context(), "a", 9, nil); !errors.Is(err, backends.ErrInvalid) {
		t.Errorf("nil write = %v, want ErrInvalid", err)
	}
}

// Eight writers under one token are inside their writes at once: each
// waits for all eight, which would never happen if the guard ran them one
// at a time (synctest reports the deadlock).
func TestGuardRunsOneTermsWritesConcurrently(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g fence.Guard
		var inside sync.WaitGroup
		inside.Add(8)
		var done sync.WaitGroup
		var ok atomic.Int32
		for range 8 {
			done.Go(func() {
				err := g.Do(t.Context(), "job", 3, func(context.Context) error {
					inside.Done()
					inside.Wait()
					return nil
				})
				if err == nil {
					ok.Add(1)
				}
			})
		}
		done.Wait()
		if ok.Load() != 8 {
			t.Fatalf("%d of 8 writes under one token succeeded", ok.Load())
		}
	})
}

// A new leader's first write waits for the old leader's write that is
// running; after it, the old token is refused.
func TestGuardHigherTokenWaitsForRunningWrites(t *testing.T) {
	var g fence.Guard
	inside, release := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var order []events.Token
	note := func(tok events.Token) {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, tok)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		g.Do(t.Context(), "job", 4, func(context.Context) error {
			close(inside)
			<-release // the old leader's slow write
			note(4)
			return nil
		})
	})
	<-inside
	wg.Go(func() {
		if err := g.Do(t.Context(), "job", 5, func(context.Context) error { note(5); return nil }); err != nil {
			t.Errorf("new leader's write: %v", err)
		}
	})
	time.Sleep(50 * time.Millisecond) // room for a wrong guard to let 5 write first
	close(release)
	wg.Wait()
	if len(order) != 2 || order[0] != 4 || order[1] != 5 {
		t.Fatalf("writes landed in order %v, want [4 5]", order)
	}
	if err := g.Do(t.Context(), "job", 4, write); !errors.Is(err, backends.ErrNotHeld) {
		t.Fatalf("old leader's next write = %v, want ErrNotHeld", err)
	}
}

// Save sees every rise of the highest token, and a failed Save refuses
// the write and keeps the token where it was; Load restores tokens.
func TestGuardSaveAndLoad(t *testing.T) {
	saved := map[string]events.Token{}
	fail := false
	g := fence.Guard{Save: func(_ context.Context, lock string, tok events.Token) error {
		if fail {
			return errors.New("disk full")
		}
		saved[lock] = tok
		return nil
	}}
	g.Do(t.Context(), "job", 3, write)
	g.Do(t.Context(), "job", 3, write)
	if saved["job"] != 3 {
		t.Fatalf("saved %v after writes under 3", saved)
	}
	fail = true
	if err := g.Do(t.Context(), "job", 4, write); err == nil || errors.Is(err, backends.ErrNotHeld) {
		t.Fatalf("write under 4 with Save failing = %v, want Save's error", err)
	}
	if err := g.Do(t.Context(), "job", 3, write); err != nil {
		t.Fatalf("write under 3 after the failed rise = %v: the token must stay at 3", err)
	}
	var restarted fence.Guard
	restarted.Load("job", saved["job"])
	restarted.Load("job", 1) // never lowers
	if err := restarted.Do(t.Context(), "job", 2, write); !errors.Is(err, backends.ErrNotHeld) {
		t.Fatalf("after Load(3), write under 2 = %v, want ErrNotHeld", err)
	}
	if err := restarted.Do(t.Context(), "job", 3, write); err != nil {
		t.Fatalf("after Load(3), write under 3 = %v", err)
	}
}

// Handler admits requests through the guard: 204 from the service under
// a current token, 409 under a stale one, 400 without the headers; a lock
// name of any characters goes through the header.
func TestHandler(t *testing.T) {
	var g fence.Guard
	var served atomic.Int32
	srv := httptest.NewServer(g.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		w.WriteHeader(http.StatusNoContent)
	})))
	defer srv.Close()
	post := func(lock string, tok events.Token, headers bool) int {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		if headers {
			fence.SetHeaders(req.Header, lock, tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	const name = "tenant/é ü/nightly"
	for i, step := range []struct {
		lock    string
		token   events.Token
		headers bool
		want    int
	}{
		{name, 5, true, 204}, {name, 7, true, 204}, {name, 5, true, 409}, {name, 0, true, 409},
		{name, 7, true, 204}, {"", 9, true, 400}, {name, 9, false, 400},
	} {
		if got := post(step.lock, step.token, step.headers); got != step.want {
			t.Errorf("step %d (%q, token %d): status %d, want %d", i, step.lock, step.token, got, step.want)
		}
	}
	if served.Load() != 3 {
		t.Errorf("the service served %d requests, want the 3 admitted", served.Load())
	}
}
