package memberlist

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"slices"

	hmemberlist "github.com/hashicorp/memberlist"

	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/validate"
	"github.com/hustings/hustings/strategy"
)

// MaxMetaSize is memberlist's limit on one node's metadata, in bytes: the
// encoded total of the node's group registrations and announced
// leaderships must fit in it.
const MaxMetaSize = hmemberlist.MetaMaxSize

// entryVersion is the first byte of an encoded entry; a node ignores the
// entries of versions it does not know.
const entryVersion = 1

// entry is what one node gossips about itself: its join order, its
// registrations by group and its leadership claims by lock name. Entries
// are values: changes make a copy.
type entry struct {
	order  uint64
	groups map[string]strategy.Candidate // Score, Weight and Meta only
	claims map[string]claim
}

// claim is one announced leadership.
type claim struct {
	slot  int
	token events.Token
}

// withGroup returns a copy of e with c registered in group.
func (e entry) withGroup(group string, c strategy.Candidate) entry {
	e.groups = maps.Clone(e.groups)
	if e.groups == nil {
		e.groups = map[string]strategy.Candidate{}
	}
	e.groups[group] = strategy.Candidate{Score: c.Score, Weight: c.Weight, Meta: maps.Clone(c.Meta)}
	return e
}

// withoutGroup returns a copy of e without a registration in group.
func (e entry) withoutGroup(group string) entry {
	e.groups = maps.Clone(e.groups)
	delete(e.groups, group)
	return e
}

// withClaim returns a copy of e claiming name.
func (e entry) withClaim(name string, c claim) entry {
	e.claims = maps.Clone(e.claims)
	if e.claims == nil {
		e.claims = map[string]claim{}
	}
	e.claims[name] = c
	return e
}

// withoutClaim returns a copy of e without a claim on name.
func (e entry) withoutClaim(name string) entry {
	e.claims = maps.Clone(e.claims)
	delete(e.claims, name)
	return e
}

// encode returns e in its gossip form: the version byte, then uvarints,
// length-prefixed strings and little-endian float64s, every map in key
// order, so that equal entries encode to equal bytes.
func (e entry) encode() []byte {
	b := []byte{entryVersion}
	b = binary.AppendUvarint(b, e.order)
	b = binary.AppendUvarint(b, uint64(len(e.groups)))
	for _, g := range slices.Sorted(maps.Keys(e.groups)) {
		c := e.groups[g]
		b = appendString(b, g)
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(c.Score))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(c.Weight))
		b = binary.AppendUvarint(b, uint64(len(c.Meta)))
		for _, k := range slices.Sorted(maps.Keys(c.Meta)) {
			b = appendString(appendString(b, k), c.Meta[k])
		}
	}
	b = binary.AppendUvarint(b, uint64(len(e.claims)))
	for _, name := range slices.Sorted(maps.Keys(e.claims)) {
		c := e.claims[name]
		b = appendString(b, name)
		b = binary.AppendUvarint(b, uint64(c.slot))
		b = binary.AppendUvarint(b, uint64(c.token))
	}
	return b
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// decodeEntry parses what encode made. It never trusts b: every length is
// checked against what is left, and an error comes back instead of a
// panic.
func decodeEntry(b []byte) (entry, error) {
	if len(b) == 0 || b[0] != entryVersion {
		return entry{}, errCorrupt
	}
	r := reader{b: b[1:]}
	e := entry{order: r.uvarint()}
	for range r.count() {
		if e.groups == nil {
			e.groups = map[string]strategy.Candidate{}
		}
		g := r.str()
		c := strategy.Candidate{Score: r.float(), Weight: r.float()}
		for range r.count() {
			if c.Meta == nil {
				c.Meta = map[string]string{}
			}
			k := r.str()
			c.Meta[k] = r.str()
		}
		e.groups[g] = c
	}
	for range r.count() {
		if e.claims == nil {
			e.claims = map[string]claim{}
		}
		name := r.str()
		e.claims[name] = claim{slot: int(r.bounded(math.MaxInt32)), token: events.Token(r.uvarint())}
	}
	if r.err != nil || len(r.b) != 0 {
		return entry{}, errCorrupt
	}
	if err := e.validate(); err != nil {
		return entry{}, err
	}
	return e, nil
}

// validate checks what a peer sent as this package's own inputs are
// checked, so that a bad peer cannot make rankings fail on every node.
func (e entry) validate() error {
	for g, c := range e.groups {
		if err := validate.Candidate(g, c); err != nil {
			return fmt.Errorf("%w: %w", errCorrupt, err)
		}
	}
	for name := range e.claims {
		if err := validate.Name(name); err != nil {
			return fmt.Errorf("%w: %w", errCorrupt, err)
		}
	}
	return nil
}

// reader reads the parts of an encoded entry; after the first error every
// read returns a zero value and err stays set.
type reader struct {
	b   []byte
	err error
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errCorrupt
		return 0
	}
	r.b = r.b[n:]
	return v
}

// bounded reads a uvarint that must not exceed max.
func (r *reader) bounded(max uint64) uint64 {
	v := r.uvarint()
	if v > max {
		r.err = errCorrupt
		return 0
	}
	return v
}

// count reads a number of items, each at least one byte long, so never
// more than what is left after it.
func (r *reader) count() int { return int(r.size()) }

// size reads a length that must not exceed what is left after it.
func (r *reader) size() uint64 {
	v := r.uvarint()
	if v > uint64(len(r.b)) {
		r.err = errCorrupt
		return 0
	}
	return v
}

func (r *reader) str() string {
	n := r.size()
	if r.err != nil {
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

func (r *reader) float() float64 {
	if r.err == nil && len(r.b) < 8 {
		r.err = errCorrupt
	}
	if r.err != nil {
		return 0
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(r.b))
	r.b = r.b[8:]
	return v
}
