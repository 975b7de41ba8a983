package zookeeper

import (
	"errors"
	"fmt"
	"testing"

	"github.com/hustings/hustings/backends"
)

// TestHeldErrorReads: Acquire's error for a held lock matches
// backends.ErrHeld and reads as the fmt.Errorf it replaces did.
func TestHeldErrorReads(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"holder judged", heldErr("a/b", verdict{kind: held, holder: backends.Holder{ID: "c1", Token: 42}}),
			fmt.Sprintf("%v: %q by c1 (token 42)", backends.ErrHeld, "a/b")},
		{"queued behind", heldErr("a", verdict{kind: held, ahead: 3}),
			fmt.Sprintf("%v: %q: 3 nodes ahead in its queue", backends.ErrHeld, "a")},
		{"watched", &heldError{name: "a", watched: true},
			fmt.Sprintf("%v: %q: the node ahead of its own is still there", backends.ErrHeld, "a")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !errors.Is(tt.err, backends.ErrHeld) {
				t.Errorf("%v does not match backends.ErrHeld", tt.err)
			}
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("message %q, want %q", got, tt.want)
			}
			if w := fmt.Errorf("campaign: %w", tt.err); !errors.Is(w, backends.ErrHeld) {
				t.Errorf("wrapped, %v does not match backends.ErrHeld", w)
			}
		})
	}
}
