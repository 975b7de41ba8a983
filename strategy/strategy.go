package strategy

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
)

// ErrInvalid is returned, wrapped with what is wrong, for a candidate list
// a strategy cannot rank, or an unknown strategy name.
var ErrInvalid = errors.New("strategy: invalid")

// Candidate is one live member of a group, as a registry or gossip sees
// it. Rankings read only these fields.
type Candidate struct {
	// ID is the candidate's unique ID.
	ID string
	// Order is the registration order the registry assigned: lower joined
	// earlier. FIFO ranks by it, and it breaks ties of Score.
	Order uint64
	// Score is the candidate's fitness (for example idle time); higher is
	// better. Used by Score.
	Score float64
	// Weight is the candidate's share of the lead under Weighted: its
	// chance to rank first is proportional to it. Must be > 0 there.
	Weight float64
	// Meta is free-form metadata, carried and never read by rankings.
	Meta map[string]string
}

// Strategy ranks a group's candidates, best first. Rank is pure and
// deterministic: every node that ranks the same list for the same group
// and epoch gets the same order, without talking to the others. It never
// changes its input.
type Strategy interface {
	// Name returns the strategy's name: "fifo", "random", "score" or
	// "weighted".
	Name() string
	// Rank returns the candidates in order of preference. The epoch lets
	// hash-based strategies rotate: it advances on the group's rotation
	// period (group.WithRotation), on each node's clock, and never
	// otherwise. Bad input (an empty or repeated ID, a NaN
	// score, a weight ≤ 0 under Weighted) returns an error matching
	// ErrInvalid.
	Rank(group string, epoch uint64, candidates []Candidate) ([]Candidate, error)
}

// FIFO ranks by registration order, earliest first, like Apache Curator's
// LeaderLatch: the longest-standing candidates lead.
func FIFO() Strategy { return fifo{} }

type fifo struct{}

func (fifo) Name() string { return "fifo" }

func (fifo) Rank(_ string, _ uint64, cs []Candidate) ([]Candidate, error) {
	return sorted(cs, byOrder)
}

// Score ranks by score, highest first; ties by registration order, then
// ID.
func Score() Strategy { return score{} }

type score struct{}

func (score) Name() string { return "score" }

func (score) Rank(_ string, _ uint64, cs []Candidate) ([]Candidate, error) {
	for _, c := range cs {
		if math.IsNaN(c.Score) {
			return nil, fmt.Errorf("%w: candidate %q has a NaN score", ErrInvalid, c.ID)
		}
	}
	return sorted(cs, func(a, b Candidate) int {
		return cmp.Or(cmp.Compare(b.Score, a.Score), byOrder(a, b))
	})
}

// sorted validates IDs and returns a sorted copy.
func sorted(cs []Candidate, by func(a, b Candidate) int) ([]Candidate, error) {
	if err := checkIDs(cs); err != nil {
		return nil, err
	}
	out := slices.Clone(cs)
	slices.SortStableFunc(out, by)
	return out, nil
}

func byOrder(a, b Candidate) int {
	return cmp.Or(cmp.Compare(a.Order, b.Order), cmp.Compare(a.ID, b.ID))
}

// checkIDs rejects empty and repeated IDs.
func checkIDs(cs []Candidate) error {
	seen := make(map[string]bool, len(cs))
	for _, c := range cs {
		if c.ID == "" {
			return fmt.Errorf("%w: candidate with an empty ID", ErrInvalid)
		}
		if seen[c.ID] {
			return fmt.Errorf("%w: candidate %q listed twice", ErrInvalid, c.ID)
		}
		seen[c.ID] = true
	}
	return nil
}
