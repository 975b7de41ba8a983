package record

import (
	"testing"

	"github.com/hustings/hustings/backends"
)

// SetKeepHook makes f run when session s of a Notifier's Store is about
// to join the Store's feed (between keep's check and its Keep), until
// the test ends.
func SetKeepHook(t testing.TB, s backends.Session, f func()) {
	old := keepHook
	keepHook = func(ss *session) {
		if s == backends.Session(ss) {
			f()
		}
	}
	t.Cleanup(func() { keepHook = old })
}

// FeedRuns reports whether the Store's watch hub has a run: its feed (or
// its polling) is running.
func FeedRuns(s *Store) bool { return s.hub.h.Current() != nil }
