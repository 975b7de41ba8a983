package zookeeper_test

import (
	"errors"
	"testing"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
)

// TestDequeue: a session queued on "a" that takes "b" leaves a's line, so
// a's release frees "a" for a third session; a lock the queue made the
// session's without telling it is released; a lock it was told it holds
// stays held.
func TestDequeue(t *testing.T) {
	const timeout = 4 * time.Second
	b := newBackend(t, dial(t, server(t).Addr(), timeout), timeout)
	ctx := t.Context()
	open := func(id string) backends.Session {
		s, err := b.Open(ctx, id, timeout)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close(ctx) })
		return s
	}
	acquire := func(s backends.Session, name string) events.Token {
		tok, err := s.Acquire(ctx, name, 0)
		if err != nil {
			t.Fatalf("%s: Acquire(%q): %v", s.ID(), name, err)
		}
		return tok
	}
	queue := func(s backends.Session, name string) {
		if _, err := s.Acquire(ctx, name, 0); !errors.Is(err, backends.ErrHeld) {
			t.Fatalf("%s: Acquire(%q) of a held lock: %v, want ErrHeld", s.ID(), name, err)
		}
	}
	dequeue := func(s backends.Session, name string) {
		if err := s.(backends.Dequeuer).Dequeue(ctx, name); err != nil {
			t.Fatalf("%s: Dequeue(%q): %v", s.ID(), name, err)
		}
	}
	holder := func(name, want string) {
		if h, err := b.Holder(ctx, name); err != nil || h.ID != want {
			t.Fatalf("Holder(%q) = %+v, %v; want %q", name, h, err, want)
		}
	}

	t.Run("queued", func(t *testing.T) {
		h, s, x := open("h"), open("s"), open("x")
		tok := acquire(h, "a")
		queue(s, "a")
		acquire(s, "b")
		dequeue(s, "a")
		dequeue(s, "a") // no longer in line: nothing to do
		if err := h.Release(ctx, "a", tok, 0); err != nil {
			t.Fatal(err)
		}
		holder("a", "")
		acquire(x, "a")
		holder("b", "s")
	})
	t.Run("made holder untold", func(t *testing.T) {
		h, s := open("h"), open("s")
		tok := acquire(h, "c")
		queue(s, "c")
		if err := h.Release(ctx, "c", tok, 0); err != nil {
			t.Fatal(err)
		}
		holder("c", "s") // the queue made s the holder; no Acquire told it
		dequeue(s, "c")
		holder("c", "")
	})
	t.Run("told holder", func(t *testing.T) {
		s := open("s")
		tok := acquire(s, "d")
		dequeue(s, "d")
		holder("d", "s")
		if again := acquire(s, "d"); again != tok {
			t.Fatalf("Acquire after Dequeue: token %d, want %d", again, tok)
		}
	})
}
