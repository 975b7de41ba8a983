package hustingstest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/hustingstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestCrash: calls pass through until Crash, then hang until their
// context ends; after Refuse they fail at once, hanging ones included.
func TestCrash(t *testing.T) {
	b := hustingstest.NewCrashable(memory.New())
	s, err := b.Open(t.Context(), "a", time.Second)
	if err != nil {
		t.Fatalf("Open before the crash: %v", err)
	}
	if _, err := s.Acquire(t.Context(), "lock", 0); err != nil {
		t.Fatalf("Acquire before the crash: %v", err)
	}
	b.Crash()
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if err := s.KeepAlive(ctx); !errors.Is(err, backends.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("KeepAlive after the crash = %v, want ErrUnavailable when its context ended", err)
	}

	hung := make(chan error, 1)
	go func() { _, err := b.Holder(context.Background(), "lock"); hung <- err }()
	b.Refuse()
	b.Refuse() // idempotent
	if err := <-hung; !errors.Is(err, backends.ErrUnavailable) {
		t.Fatalf("a hanging Holder after Refuse = %v, want ErrUnavailable", err)
	}
	if err := s.Close(context.Background()); !errors.Is(err, backends.ErrUnavailable) {
		t.Fatalf("Close after Refuse = %v, want ErrUnavailable at once", err)
	}
}

// TestRefuseAlone: Refuse without Crash crashes too.
func TestRefuseAlone(t *testing.T) {
	b := hustingstest.NewCrashable(memory.New())
	b.Refuse()
	if _, err := b.Open(context.Background(), "a", time.Second); !errors.Is(err, backends.ErrUnavailable) {
		t.Fatalf("Open after Refuse = %v, want ErrUnavailable", err)
	}
}

// TestCrashableOfNilBackend: a Crashable wrapping no backend (nil, or a
// typed nil) fails every call with ErrInvalid instead of panicking, so a
// campaign on it ends with ErrInvalid.
func TestCrashableOfNilBackend(t *testing.T) {
	for name, b := range map[string]backends.Backend{"nil": nil, "typed nil": (*memory.Backend)(nil)} {
		t.Run(name, func(t *testing.T) {
			c := hustingstest.NewCrashable(b)
			if _, err := c.Open(t.Context(), "a", time.Second); !errors.Is(err, backends.ErrInvalid) {
				t.Errorf("Open = %v, want ErrInvalid", err)
			}
			if _, err := c.Holder(t.Context(), "x"); !errors.Is(err, backends.ErrInvalid) {
				t.Errorf("Holder = %v, want ErrInvalid", err)
			}
			if _, err := c.Watch(t.Context(), "x"); !errors.Is(err, backends.ErrInvalid) {
				t.Errorf("Watch = %v, want ErrInvalid", err)
			}
			if _, err := c.List(t.Context(), ""); !errors.Is(err, backends.ErrInvalid) {
				t.Errorf("List = %v, want ErrInvalid", err)
			}
			if _, err := c.Members(t.Context(), "g"); !errors.Is(err, backends.ErrInvalid) {
				t.Errorf("Members = %v, want ErrInvalid", err)
			}
		})
	}
}
