package history

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hustings/hustings/events"
)

// Holding is a node holding a lock under a token: what a node believes, or
// what the backend records.
type Holding struct {
	Node  string
	Token events.Token
}

// Beliefs returns what nodes believe after printing evs: for each lock,
// every node whose last event is its election. Pass only the events of
// nodes still alive.
func Beliefs(evs []Event) map[Key][]Holding {
	last := map[string]Event{}
	for _, e := range evs {
		last[e.Node] = e
	}
	out := map[Key][]Holding{}
	for _, node := range slices.Sorted(maps.Keys(last)) {
		if e := last[node]; e.Kind == Elected {
			out[e.Key] = append(out[e.Key], Holding{node, e.Token})
		}
	}
	return out
}

// Agree returns nil if beliefs match the backend's holders exactly: every
// held lock is believed held by its holder alone, under the holder's
// token, and nobody believes it holds a lock the backend says is free.
// holders lists held locks only. The error names every disagreement.
func Agree(beliefs map[Key][]Holding, holders map[Key]Holding) error {
	keys := slices.Collect(maps.Keys(holders))
	for k := range beliefs {
		if _, ok := holders[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b Key) int { return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Slot, b.Slot)) })
	var diffs []string
	for _, k := range keys {
		h, held := holders[k]
		bs := beliefs[k]
		switch {
		case !held:
			diffs = append(diffs, fmt.Sprintf("%v is free but %v believe they hold it", k, bs))
		case len(bs) != 1 || bs[0] != h:
			diffs = append(diffs, fmt.Sprintf("%v is held by %s (token %d) but believed held by %v", k, h.Node, h.Token, bs))
		}
	}
	if len(diffs) > 0 {
		return fmt.Errorf("history: %s", strings.Join(diffs, "; "))
	}
	return nil
}
