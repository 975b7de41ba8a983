package strategy

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
)

// Random ranks uniformly at random, by rendezvous (highest random weight)
// hashing of (group, epoch, candidate ID): every node computes the same
// order without talking, each candidate is equally likely to rank first,
// and a new epoch gives a new draw.
func Random() Strategy { return random{} }

type random struct{}

func (random) Name() string { return "random" }

func (random) Rank(group string, epoch uint64, cs []Candidate) ([]Candidate, error) {
	return sorted(cs, byKey(func(c Candidate) float64 { return draw(group, epoch, c.ID) }))
}

// Weighted ranks by weighted rendezvous hashing: a candidate's chance to
// rank first in an epoch is its weight over the sum of weights. Weights
// must be finite and > 0.
func Weighted() Strategy { return weighted{} }

type weighted struct{}

func (weighted) Name() string { return "weighted" }

func (weighted) Rank(group string, epoch uint64, cs []Candidate) ([]Candidate, error) {
	for _, c := range cs {
		if !(c.Weight > 0) || math.IsInf(c.Weight, 0) {
			return nil, fmt.Errorf("%w: candidate %q has weight %v; weights must be finite and > 0", ErrInvalid, c.ID, c.Weight)
		}
	}
	// With u uniform in (0,1), -w/ln(u) is highest for candidate i with
	// probability w_i / Σw (the exponential race behind weighted
	// rendezvous hashing).
	return sorted(cs, byKey(func(c Candidate) float64 { return -c.Weight / math.Log(draw(group, epoch, c.ID)) }))
}

// byKey orders by key, highest first, ties by ID.
func byKey(key func(Candidate) float64) func(a, b Candidate) int {
	return func(a, b Candidate) int {
		return cmp.Or(cmp.Compare(key(b), key(a)), cmp.Compare(a.ID, b.ID))
	}
}

// draw maps (group, epoch, id) to a number uniform in (0,1), the same on
// every node and platform: FNV-1a over an unambiguous encoding, then the
// SplitMix64 finaliser for good mixing of short inputs.
func draw(group string, epoch uint64, id string) float64 {
	h := fnv.New64a()
	var n [8]byte
	for _, s := range []string{group, id} {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	binary.BigEndian.PutUint64(n[:], epoch)
	h.Write(n[:])
	x := mix(h.Sum64())
	return (float64(x>>11) + 0.5) / (1 << 53)
}

func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
