package backendtest

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
)

// Open opens a session on b for id with ttl, failing t on an error. The
// session is closed when the test ends.
func Open(t testing.TB, b backends.Backend, id string, ttl time.Duration) backends.Session {
	t.Helper()
	s, err := b.Open(t.Context(), id, ttl)
	if err != nil {
		t.Fatalf("Open(%q): %v", id, err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) }) // t.Context() is done by now
	return s
}

// Acquire acquires name on s, with no lease of its own, failing t on an
// error.
func Acquire(t testing.TB, s backends.Session, name string) events.Token {
	t.Helper()
	tok, err := s.Acquire(t.Context(), name, 0)
	if err != nil {
		t.Fatalf("%s: Acquire(%q): %v", s.ID(), name, err)
	}
	return tok
}

// Names returns n lock names: prefix followed by 0 to n-1.
func Names(prefix string, n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = prefix + strconv.Itoa(i)
	}
	return names
}

// AcquireAtOnce acquires each of names on s, all at once (a goroutine
// each), with no lease of their own, failing t on an error, and returns
// their tokens in the order of names.
func AcquireAtOnce(t testing.TB, s backends.Session, names []string) []events.Token {
	t.Helper()
	toks := make([]events.Token, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() { toks[i], errs[i] = s.Acquire(t.Context(), name, 0) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("%s: Acquire: %v", s.ID(), err)
	}
	return toks
}

// HeldBy fails t unless b reports each of names held by id under the
// token of the same index in toks.
func HeldBy(t testing.TB, b backends.Backend, id string, names []string, toks []events.Token) {
	t.Helper()
	for i, name := range names {
		if h, err := b.Holder(t.Context(), name); err != nil || h.ID != id || h.Token != toks[i] {
			t.Fatalf("Holder(%q) = %+v, %v; want %s, %d", name, h, err, id, toks[i])
		}
	}
}
