package zookeeper_test

import (
	"slices"
	"testing"
	"time"

	"github.com/hustings/hustings/backends/backendtest"
	"github.com/hustings/hustings/events"
)

// candidate is one campaign of a fault test, recording its events.
type candidate = backendtest.Recorder

// term is one candidate's belief that it leads, from Elected to Revoked
// (or to now if it still leads).
type term struct {
	id         string
	token      events.Token
	start, end time.Time
}

// terms pairs the candidates' Elected and Revoked events.
func terms(t *testing.T, cands ...*candidate) []term {
	t.Helper()
	var all []term
	for _, k := range cands {
		var open *term
		for _, e := range k.Events() {
			switch e.Kind {
			case events.Elected:
				if open != nil {
					t.Errorf("%s: Elected (token %d) while term %d was not revoked", k.ID, e.Token, open.token)
				}
				open = &term{id: k.ID, token: e.Token, start: e.Time}
			case events.Revoked:
				if open == nil || open.token != e.Token {
					t.Errorf("%s: Revoked (token %d) without its Elected", k.ID, e.Token)
					continue
				}
				open.end = e.Time
				all = append(all, *open)
				open = nil
			}
		}
		if open != nil {
			open.end = time.Now()
			all = append(all, *open)
		}
	}
	slices.SortFunc(all, func(a, b term) int { return a.start.Compare(b.start) })
	return all
}

// checkHistory fails the test unless, across the candidates of one lock,
// terms never overlap (no two candidates believe they lead at once) and
// tokens strictly increase from term to term. It returns the terms.
func checkHistory(t *testing.T, cands ...*candidate) []term {
	t.Helper()
	all := terms(t, cands...)
	for i := 1; i < len(all); i++ {
		prev, cur := all[i-1], all[i]
		if cur.token <= prev.token {
			t.Errorf("token went backwards: %s got %d after %s had %d", cur.id, cur.token, prev.id, prev.token)
		}
		if cur.start.Before(prev.end) {
			t.Errorf("%s was elected (token %d) at %v, while %s still believed it led (token %d) until %v",
				cur.id, cur.token, cur.start.Format(time.StampMilli), prev.id, prev.token, prev.end.Format(time.StampMilli))
		}
	}
	return all
}
