// Package dialtest holds the checks that every opener package's tests run
// through package dial: bad URLs, parsed URLs, and an election on a real
// server opened by URL.
package dialtest

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hustings/hustings/backends/backendtest"
	"github.com/hustings/hustings/backends/dial"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
)

// CheckBad parses every URL of bad, which maps it to a part of the
// message it must get: each error must match dial.ErrURL, contain that
// part, be at most 400 bytes on one line, and never show the password
// "secret".
func CheckBad(t *testing.T, bad map[string]string) {
	t.Helper()
	for _, url := range slices.Sorted(maps.Keys(bad)) {
		names := bad[url]
		t.Run(url[:min(len(url), 40)], func(t *testing.T) {
			_, err := dial.Parse(url)
			if !errors.Is(err, dial.ErrURL) || !strings.Contains(err.Error(), names) {
				t.Fatalf("Parse(%.60q) = %v, want a bad-URL error naming %s", url, err, names)
			}
			if msg := err.Error(); strings.Contains(msg, "secret") || strings.Contains(msg, "\n") || len(msg) > 400 {
				t.Fatalf("error of %d bytes shows a password or is several lines: %.200q…", len(msg), msg)
			}
		})
	}
}

// CheckParse parses every URL of good, compares the exported fields of
// the Target with those good maps it to, and parses its String again to
// the same fields.
func CheckParse(t *testing.T, good map[string]dial.Target) {
	t.Helper()
	for _, url := range slices.Sorted(maps.Keys(good)) {
		got, err := dial.Parse(url)
		if err != nil || !Same(got, good[url]) {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", url, got, err, good[url])
			continue
		}
		if again, err := dial.Parse(got.String()); err != nil || !Same(again, got) {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", got.String(), again, err, got)
		}
	}
}

// Same reports whether a and b have the same exported fields.
func Same(a, b dial.Target) bool {
	return a.Scheme == b.Scheme && slices.Equal(a.Hosts, b.Hosts) && a.DB == b.DB &&
		a.Root == b.Root && a.Bucket == b.Bucket && a.DSN == b.DSN
}

// Elect opens url with dial.Open and runs one campaign on it until it is
// elected, within 30 s; then it closes the campaign and the client.
func Elect(t *testing.T, url string) {
	t.Helper()
	b, closeBackend, err := dial.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer closeBackend()
	r := backendtest.Record(t, b, "dial-test", "dial", campaign.WithTTL(2*time.Second))
	defer r.Stop()
	r.Expect(t, events.Elected, 30*time.Second)
}
