package validate_test

import (
	"errors"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/internal/validate"
)

// FuzzName: the validator never panics, accepts exactly the names
// the rules allow, and names the offending part when it refuses.
func FuzzName(f *testing.F) {
	for _, seed := range []string{"", "job", "billing/nightly", "a\x00b", "\xff", "tenant-42{x}", "é", strings.Repeat("x", validate.MaxNameLen+1), "line\nbreak"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, name string) {
		err := validate.Name(name)
		valid := name != "" && len(name) <= validate.MaxNameLen && utf8.ValidString(name) &&
			strings.IndexFunc(name, unicode.IsControl) < 0
		if valid != (err == nil) {
			t.Fatalf("validate.Name(%q) = %v; the rules say valid=%v", name, err, valid)
		}
		if err != nil && !errors.Is(err, backends.ErrInvalid) {
			t.Fatalf("validate.Name(%q) = %v, not ErrInvalid", name, err)
		}
		if i := strings.IndexFunc(name, unicode.IsControl); err != nil && i >= 0 && utf8.ValidString(name) && name != "" && len(name) <= validate.MaxNameLen {
			if !strings.Contains(err.Error(), "control character") {
				t.Fatalf("validate.Name(%q) = %v, does not name the control character", name, err)
			}
		}
	})
}

func TestNil(t *testing.T) {
	var p *int
	var m map[string]int
	var f func()
	var e error
	for _, tc := range []struct {
		name string
		v    any
		want bool
	}{
		{"nil", nil, true},
		{"nil interface", e, true},
		{"typed-nil pointer", p, true},
		{"nil map", m, true},
		{"nil func", f, true},
		{"pointer", new(int), false},
		{"zero int", 0, false},
		{"empty string", "", false},
	} {
		if got := validate.Nil(tc.v); got != tc.want {
			t.Errorf("%s: Nil = %v, want %v", tc.name, got, tc.want)
		}
	}
}
