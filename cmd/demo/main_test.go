package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/hustings/hustings/backends/dial"
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

// TestShow runs the whole show on the memory backend, checks its story,
// and checks that the README's sample output tells the same story.
func TestShow(t *testing.T) {
	var out bytes.Buffer
	if err := show(t.Context(), memory.New(), dial.Target{Scheme: "memory"}, &out, nil); err != nil {
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
		"foxtrot revoked itself all the same (unreachable)",
		"the top 3 of the draw",
		"fencing tokens of the reconcile lock only grew: [1 2 3]",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	if groupSlots := regexp.MustCompile(`elected\s+rollups\[(\d)\]`).FindAllStringSubmatch(s, -1); len(groupSlots) != 5 {
		t.Errorf("the weighted group had %d elections, want 5 (two, one, then two handovers):\n%s", len(groupSlots), s)
	}
	checkInOrder(t, s)
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	block, err := readmeSample(string(readme))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := storyOf(s), storyOf(block); !slices.Equal(got, want) {
		t.Errorf("the README's sample output tells another story than the show: paste a fresh run of `go run ./cmd/demo` into it\nshow:\n%s\nREADME:\n%s",
			strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// checkInOrder fails if the elapsed times of the lines ever go back.
func checkInOrder(t *testing.T, out string) {
	t.Helper()
	last := -1.0
	for _, m := range regexp.MustCompile(`(?m)^\s*(\d+\.\d)ms `).FindAllStringSubmatch(out, -1) {
		at, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		if at < last {
			t.Errorf("%vms after %vms:\n%s", at, last, out)
		}
		last = at
	}
}

// readmeSample returns the README's sample output: the block after "The
// demo prints a timeline like this".
func readmeSample(readme string) (string, error) {
	_, after, ok := strings.Cut(readme, "The demo prints a timeline like this")
	if !ok {
		return "", errors.New("README: no \"The demo prints a timeline like this\"")
	}
	_, after, ok = strings.Cut(after, "```\n")
	block, _, ok2 := strings.Cut(after, "```\n")
	if !ok || !ok2 {
		return "", errors.New("README: no ``` block after \"The demo prints a timeline like this\"")
	}
	return block, nil
}

// storyOf reduces the show's output to its story: the notes in order, and
// between two notes the events as a sorted list (events close together
// may come in either order), each without names, numbers or times.
func storyOf(out string) []string {
	var names []string
	for _, n := range []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliett", "kilo"} {
		names = append(names, n, "X")
	}
	mask := strings.NewReplacer(names...)
	duration := regexp.MustCompile(`[0-9.]+(ns|µs|us|ms|s|m|h)\b`)
	number := regexp.MustCompile(`[0-9]+`)
	row := regexp.MustCompile(`^\s*\S+ms\s+(\S+)\s+(elected|revoked)\s+(\S+)\s+(\d+)\s+(.*)$`)
	note := regexp.MustCompile(`^\s*\S+ms\s+# (.*)$`)
	clean := func(s string) string {
		return number.ReplaceAllString(duration.ReplaceAllString(mask.Replace(s), "D"), "N")
	}
	var story, events []string
	for _, line := range strings.Split(out, "\n") {
		if m := row.FindStringSubmatch(line); m != nil {
			events = append(events, "  "+clean(m[2]+" "+m[3]+" "+m[5]))
		} else if m := note.FindStringSubmatch(line); m != nil {
			slices.Sort(events)
			story = append(append(story, events...), "# "+clean(m[1]))
			events = nil
		}
	}
	slices.Sort(events)
	return append(story, events...)
}

// TestDemoLinksNoTestCodeOrServer: the demo builds fast because it links
// neither package testing nor the etcd server nor toxiproxy.
func TestDemoLinksNoTestCodeOrServer(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	heavy := regexp.MustCompile(`^testing$|etcd/server|toxiproxy`)
	for _, pkg := range strings.Fields(string(out)) {
		if heavy.MatchString(pkg) {
			t.Errorf("the demo links %s", pkg)
		}
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

// TestStoryOf: the story ignores times, names, numbers and the order of
// events between two notes, and nothing else.
func TestStoryOf(t *testing.T) {
	out := `     0.0ms  # alpha and bravo campaign (TTL 2s)
   elapsed  candidate  event     lock            token  detail
     0.2ms  alpha      elected   reconcile           1  deadline +1.8s
   751.2ms  # alpha crashes
  2467.5ms  alpha      revoked   reconcile           1  backend unreachable at the deadline
  2796.2ms  bravo      elected   reconcile           2  deadline +1.674s
  2796.3ms  # bravo took over 2.045s after the crash
`
	same := strings.NewReplacer("alpha", "charlie", "bravo", "alpha", "2.045s", "190µs", "2796.2", "2800.0", "+1.674s", "+1.7s").Replace(out)
	lines := strings.Split(out, "\n")
	lines[4], lines[5] = lines[5], lines[4]
	swapped := strings.Join(lines, "\n")
	if !slices.Equal(storyOf(out), storyOf(same)) || !slices.Equal(storyOf(out), storyOf(swapped)) {
		t.Errorf("the story changed with times, names or order within an act:\n%q\n%q\n%q", storyOf(out), storyOf(same), storyOf(swapped))
	}
	for _, changed := range []string{
		strings.Replace(out, "   751.2ms  # alpha crashes\n", "", 1),
		strings.Replace(out, "backend unreachable at the deadline", "resigned", 1),
		strings.Replace(out, "# alpha crashes", "# alpha resigns", 1),
		out + "  2800.0ms  bravo      revoked   reconcile           2  resigned\n",
	} {
		if slices.Equal(storyOf(out), storyOf(changed)) {
			t.Errorf("the story did not change:\n%s", changed)
		}
	}
}
