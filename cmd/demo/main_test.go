package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestDemo runs the whole show and checks its story: three terms with
// growing tokens, a resignation, a revocation at the deadline, and every
// term closed at the end.
func TestDemo(t *testing.T) {
	var out bytes.Buffer
	if err := run(t.Context(), &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	s := out.String()
	elected := regexp.MustCompile(`(?m)^\s+\S+ms\s+\w+\s+elected\s+(\d+)`).FindAllStringSubmatch(s, -1)
	if len(elected) != 3 || elected[0][1] != "1" || elected[1][1] != "2" || elected[2][1] != "3" {
		t.Errorf("want elected with tokens 1, 2, 3; got %v\n%s", elected, s)
	}
	for _, want := range []string{"resigned", "backend unreachable at the deadline", "fencing tokens only grow: 1, 2, 3"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	if n := len(regexp.MustCompile(`(?m)^\s+\S+ms\s+\w+\s+revoked\s`).FindAllString(s, -1)); n != 3 {
		t.Errorf("%d revoked rows, want 3 (every term ends):\n%s", n, s)
	}
}
