package backendtest

import (
	"context"
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
