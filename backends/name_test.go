package backends_test

import (
	"errors"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/hustings/hustings/backends"
)

// FuzzValidateName: the validator never panics, accepts exactly the names
// the rules allow, and names the offending part when it refuses.
func FuzzValidateName(f *testing.F) {
	for _, seed := range []string{"", "job", "billing/nightly", "a\x00b", "\xff", "tenant-42{x}", "é", strings.Repeat("x", backends.MaxNameLen+1), "line\nbreak"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, name string) {
		err := backends.ValidateName(name)
		valid := name != "" && len(name) <= backends.MaxNameLen && utf8.ValidString(name) &&
			strings.IndexFunc(name, unicode.IsControl) < 0
		if valid != (err == nil) {
			t.Fatalf("ValidateName(%q) = %v; the rules say valid=%v", name, err, valid)
		}
		if err != nil && !errors.Is(err, backends.ErrInvalid) {
			t.Fatalf("ValidateName(%q) = %v, not ErrInvalid", name, err)
		}
		if i := strings.IndexFunc(name, unicode.IsControl); err != nil && i >= 0 && utf8.ValidString(name) && name != "" && len(name) <= backends.MaxNameLen {
			if !strings.Contains(err.Error(), "control character") {
				t.Fatalf("ValidateName(%q) = %v, does not name the control character", name, err)
			}
		}
	})
}
