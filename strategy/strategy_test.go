package strategy

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

func ids(cs []Candidate) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.ID
	}
	return out
}

var four = []Candidate{
	{ID: "c", Order: 3, Score: 5, Weight: 1},
	{ID: "a", Order: 1, Score: 1, Weight: 2},
	{ID: "d", Order: 4, Score: 9, Weight: 3},
	{ID: "b", Order: 2, Score: 5, Weight: 4},
}

func TestFIFOAndScoreOrders(t *testing.T) {
	tests := []struct {
		s    Strategy
		want []string
	}{
		{FIFO(), []string{"a", "b", "c", "d"}},
		{Score(), []string{"d", "b", "c", "a"}}, // b and c tie on score; b joined first
	}
	for _, tt := range tests {
		t.Run(tt.s.Name(), func(t *testing.T) {
			got, err := tt.s.Rank("g", 0, four)
			if err != nil || !slices.Equal(ids(got), tt.want) {
				t.Fatalf("Rank = %v, %v; want %v", ids(got), err, tt.want)
			}
		})
	}
}

// rank is s.Rank that fails the test on an error.
func rank(t *testing.T, s Strategy, group string, epoch uint64, cs []Candidate) []Candidate {
	t.Helper()
	ranked, err := s.Rank(group, epoch, cs)
	if err != nil {
		t.Fatalf("%s: Rank: %v", s.Name(), err)
	}
	return ranked
}

func TestRankIsDeterministicAndLeavesInputAlone(t *testing.T) {
	in := slices.Clone(four)
	for _, s := range []Strategy{FIFO(), Random(), Score(), Weighted()} {
		first, err := s.Rank("g", 7, in)
		if err != nil {
			t.Fatal(err)
		}
		shuffled := []Candidate{in[2], in[0], in[3], in[1]}
		again := rank(t, s, "g", 7, shuffled)
		if !slices.Equal(ids(first), ids(again)) {
			t.Errorf("%s: order depends on input order: %v vs %v", s.Name(), ids(first), ids(again))
		}
		if !slices.EqualFunc(in, four, func(a, b Candidate) bool { return a.ID == b.ID }) {
			t.Fatalf("%s changed its input", s.Name())
		}
	}
}

func TestRandomChangesWithEpochAndGroup(t *testing.T) {
	firsts := map[string]bool{}
	for epoch := range uint64(50) {
		got := rank(t, Random(), "g", epoch, four)
		firsts[got[0].ID] = true
	}
	if len(firsts) != 4 {
		t.Fatalf("over 50 epochs only %v ranked first", firsts)
	}
	a := rank(t, Random(), "g1", 1, four)
	b := rank(t, Random(), "g2", 1, four)
	c := rank(t, Random(), "g3", 1, four)
	if slices.Equal(ids(a), ids(b)) && slices.Equal(ids(b), ids(c)) {
		t.Fatal("three groups drew the same order: the group is not in the hash")
	}
}

// chiSquare returns Pearson's statistic of observed counts against
// expected proportions.
func chiSquare(observed []int, share []float64) float64 {
	total, sum := 0, 0.0
	for _, o := range observed {
		total += o
	}
	for _, s := range share {
		sum += s
	}
	x := 0.0
	for i, o := range observed {
		e := float64(total) * share[i] / sum
		x += (float64(o) - e) * (float64(o) - e) / e
	}
	return x
}

// firstPlaces counts, over many epochs, how often each candidate ranks
// first. Deterministic: hashing has no seed, so this never flakes.
func firstPlaces(t *testing.T, s Strategy, cs []Candidate, epochs int) []int {
	t.Helper()
	counts := make([]int, len(cs))
	for epoch := range uint64(epochs) {
		got, err := s.Rank("tenants", epoch, cs)
		if err != nil {
			t.Fatal(err)
		}
		counts[slices.IndexFunc(cs, func(c Candidate) bool { return c.ID == got[0].ID })]++
	}
	return counts
}

func TestFrequenciesMatchProportions(t *testing.T) {
	// 99.9th percentile of chi-square with 3 degrees of freedom.
	const critical = 16.27
	tests := []struct {
		s     Strategy
		share []float64
	}{
		{Random(), []float64{1, 1, 1, 1}},
		{Weighted(), []float64{1, 2, 3, 4}},
	}
	for _, tt := range tests {
		t.Run(tt.s.Name(), func(t *testing.T) {
			counts := firstPlaces(t, tt.s, four, 40000)
			if x := chiSquare(counts, tt.share); x > critical {
				t.Fatalf("first places %v against shares %v: chi-square %.2f > %.2f", counts, tt.share, x, critical)
			}
		})
	}
}

func TestChiSquareWouldCatchABias(t *testing.T) {
	// The same test must fail when the weights are ignored.
	counts := firstPlaces(t, Random(), four, 40000)
	if x := chiSquare(counts, []float64{1, 2, 3, 4}); x < 1000 {
		t.Fatalf("uniform draws passed as weighted: chi-square %.2f", x)
	}
}

func TestBadInput(t *testing.T) {
	tests := []struct {
		s    Strategy
		cs   []Candidate
		want string
	}{
		{FIFO(), []Candidate{{ID: ""}}, "empty ID"},
		{Random(), []Candidate{{ID: "a"}, {ID: "a"}}, "twice"},
		{Score(), []Candidate{{ID: "a", Score: math.NaN()}}, "NaN score"},
		{Weighted(), []Candidate{{ID: "a", Weight: 0}}, "weight 0"},
		{Weighted(), []Candidate{{ID: "a", Weight: -1}}, "weight -1"},
		{Weighted(), []Candidate{{ID: "a", Weight: math.NaN()}}, "weight NaN"},
		{Weighted(), []Candidate{{ID: "a", Weight: math.Inf(1)}}, "weight +Inf"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%s", tt.s.Name(), tt.want), func(t *testing.T) {
			_, err := tt.s.Rank("g", 0, tt.cs)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want ErrInvalid mentioning %q", err, tt.want)
			}
		})
	}
}

func TestEmptyList(t *testing.T) {
	for _, s := range []Strategy{FIFO(), Random(), Score(), Weighted()} {
		if got, err := s.Rank("g", 0, nil); err != nil || len(got) != 0 {
			t.Errorf("%s: Rank(nil) = %v, %v", s.Name(), got, err)
		}
	}
}
