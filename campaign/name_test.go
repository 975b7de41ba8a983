package campaign_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/internal/validate"
)

// FuzzName: New accepts a lock name exactly when the backends' rules do,
// refuses the rest with ErrInvalid, and keeps the name it was given.
func FuzzName(f *testing.F) {
	for _, seed := range []string{"job", "billing/nightly", "", "x\ny", strings.Repeat("p", 257), "\xff"} {
		f.Add(seed)
	}
	b := memory.New()
	f.Fuzz(func(t *testing.T, name string) {
		c, err := campaign.New(b, name)
		if valid := validate.Name(name) == nil; valid != (err == nil) {
			t.Fatalf("New(%q) = %v; the name is valid=%v", name, err, valid)
		}
		if err != nil {
			if !errors.Is(err, campaign.ErrInvalid) {
				t.Fatalf("New(%q) = %v, not ErrInvalid", name, err)
			}
			return
		}
		if c.State().Name != name {
			t.Fatalf("Name() = %q, want %q", c.State().Name, name)
		}
		closeOK(t, c)
	})
}
