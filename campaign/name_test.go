package campaign_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/internal/validate"
)

// FuzzPrefixJoin: a campaign's name is the prefix, a "/", and the name (or
// the name alone without a prefix), and New accepts it exactly when the
// joined name is valid.
func FuzzPrefixJoin(f *testing.F) {
	for _, seed := range [][2]string{{"", "job"}, {"billing", "nightly"}, {"a/b", "c"}, {"svc", ""}, {"x\n", "y"}, {strings.Repeat("p", 250), "name"}} {
		f.Add(seed[0], seed[1])
	}
	b := memory.New()
	f.Fuzz(func(t *testing.T, prefix, name string) {
		want := name
		if prefix != "" {
			want = prefix + "/" + name
		}
		c, err := campaign.New(b, name, campaign.WithPrefix(prefix))
		if valid := validate.Name(want) == nil; valid != (err == nil) {
			t.Fatalf("New(%q, prefix %q) = %v; the joined name %q is valid=%v", name, prefix, err, want, valid)
		}
		if err != nil {
			if !errors.Is(err, campaign.ErrInvalid) {
				t.Fatalf("New(%q, prefix %q) = %v, not ErrInvalid", name, prefix, err)
			}
			return
		}
		if c.State().Name != want {
			t.Fatalf("Name() = %q, want %q", c.State().Name, want)
		}
		c.Close()
	})
}
