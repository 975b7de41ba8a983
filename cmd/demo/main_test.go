package main

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/hustings/hustings/backends/memory"
)

// TestMain runs the demo's main instead of the tests when the node tests
// start this test binary as a demo process.
func TestMain(m *testing.M) {
	if os.Getenv("HUSTINGS_DEMO_AS_MAIN") == "1" {
		os.Args = append(os.Args[:1], os.Args[2:]...) // drop the "--" marker
		main()
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// TestShow runs the whole show on the memory backend and checks its story.
func TestShow(t *testing.T) {
	var out bytes.Buffer
	if err := show(t.Context(), memory.New(), "memory", &out); err != nil {
		t.Fatalf("show: %v\n%s", err, out.String())
	}
	s := out.String()
	elected := regexp.MustCompile(`(?m)^\s+\S+ms\s+\w+\s+elected\s+reconcile\s+(\d+)`).FindAllStringSubmatch(s, -1)
	if len(elected) != 3 || elected[0][1] != "1" || elected[1][1] != "2" || elected[2][1] != "3" {
		t.Errorf("want the reconcile lock elected with tokens 1, 2, 3; got %v\n%s", elected, s)
	}
	for _, want := range []string{
		"reconciles every",
		"backend unreachable at the deadline",
		"after the resignation: woken by the release",
		"revoked itself on time",
		"the top 3 of this epoch's weighted draw",
		"fencing tokens of the reconcile lock only grew: [1 2 3]",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	groupSlots := regexp.MustCompile(`elected\s+rollups\[(\d)\]`).FindAllStringSubmatch(s, -1)
	if len(groupSlots) < 3 {
		t.Errorf("the weighted group filled %d slots, want 3:\n%s", len(groupSlots), s)
	}
}

func TestHelpListsEveryCommand(t *testing.T) {
	var out bytes.Buffer
	if err := run(t.Context(), []string{"--help"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	for _, c := range commands() {
		if !strings.Contains(out.String(), "  "+c.name+" ") {
			t.Errorf("--help lacks %q:\n%s", c.name, out.String())
		}
	}
	if err := run(t.Context(), []string{"bogus"}, &out, &out); err == nil {
		t.Error("an unknown command ran")
	}
}
