package postgres_test

import (
	"slices"
	"testing"

	"github.com/hustings/hustings/backends/backendtest"
	"github.com/hustings/hustings/events"
)

// candidate is one campaign of a fault test, recording its events.
type candidate = backendtest.Recorder

// checkTerms fails the test unless every term of each candidate is
// revoked before the same candidate's next one, and the fencing tokens
// increase.
func checkTerms(t *testing.T, ks ...*candidate) {
	t.Helper()
	var elected []events.Event
	for _, k := range ks {
		var open *events.Event
		for _, e := range k.Events() {
			switch e.Kind {
			case events.Elected:
				if open != nil {
					t.Errorf("%s: %s before the Revoked of token %d", k.ID, e, open.Token)
				}
				elected = append(elected, e)
				open = &e
			case events.Revoked:
				if open == nil || open.Token != e.Token {
					t.Errorf("%s: %s without its Elected", k.ID, e)
				}
				open = nil
			}
		}
	}
	checkTokens(t, elected)
}

// checkTokens fails the test unless the tokens of the Elected events, in
// the order they were published, strictly increase.
func checkTokens(t *testing.T, elected []events.Event) {
	t.Helper()
	elected = slices.Clone(elected)
	slices.SortFunc(elected, func(a, b events.Event) int { return a.Time.Compare(b.Time) })
	for i := 1; i < len(elected); i++ {
		if elected[i].Token <= elected[i-1].Token {
			t.Errorf("fencing token went backwards: %s after %s", elected[i], elected[i-1])
		}
	}
}

// electedEvents returns the Elected events k published.
func electedEvents(k *candidate) []events.Event {
	var out []events.Event
	for _, e := range k.Events() {
		if e.Kind == events.Elected {
			out = append(out, e)
		}
	}
	return out
}
