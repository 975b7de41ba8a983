package elector

import (
	"fmt"
	"os"
	"regexp"
	"testing"
)

// TestDefaultID wants hostname-pid-<6 hex digits>, different each time.
func TestDefaultID(t *testing.T) {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "host"
	}
	want := regexp.MustCompile("^" + regexp.QuoteMeta(fmt.Sprintf("%s-%d-", host, os.Getpid())) + "[0-9a-f]{6}$")
	seen := map[string]bool{}
	for range 100 {
		id := defaultID()
		if !want.MatchString(id) {
			t.Fatalf("defaultID() = %q, want %s", id, want)
		}
		seen[id] = true
	}
	if len(seen) < 90 {
		t.Errorf("100 default IDs, %d distinct", len(seen))
	}
}
