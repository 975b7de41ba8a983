package zookeeper_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
)

// candidate is one campaign of a fault test, with every event it
// published, recorded by a goroutine the candidate waits for.
type candidate struct {
	id   string
	c    *campaign.Campaign
	wg   sync.WaitGroup
	mu   sync.Mutex
	seen []events.Event
	read int // events already returned by wait
}

// runCandidate runs a campaign for id on lock name of b until the test
// ends (or stop).
func runCandidate(t *testing.T, b backends.Backend, name, id string, opts ...campaign.Option) *candidate {
	t.Helper()
	c, err := campaign.New(b, name, append([]campaign.Option{campaign.WithID(id)}, opts...)...)
	if err != nil {
		t.Fatalf("campaign.New(%s): %v", id, err)
	}
	k := &candidate{id: id, c: c}
	k.wg.Go(func() { _ = c.Run(context.Background()) })
	k.wg.Go(func() {
		for e := range c.Events() {
			k.mu.Lock()
			k.seen = append(k.seen, e)
			k.mu.Unlock()
		}
	})
	t.Cleanup(k.stop)
	return k
}

// stop closes the campaign and waits for its goroutines.
func (k *candidate) stop() {
	k.c.Close()
	k.wg.Wait()
}

// events returns every event so far.
func (k *candidate) events() []events.Event {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.seen)
}

// wait returns the next event of kind after those wait already returned,
// failing the test after timeout.
func (k *candidate) wait(t *testing.T, kind events.Kind, timeout time.Duration) events.Event {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		k.mu.Lock()
		for k.read < len(k.seen) {
			e := k.seen[k.read]
			k.read++
			if e.Kind == kind {
				k.mu.Unlock()
				return e
			}
		}
		k.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("%s: no %s event within %v; events: %v", k.id, kind, timeout, k.events())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// count returns how many events of kind the candidate published.
func (k *candidate) count(kind events.Kind) int {
	n := 0
	for _, e := range k.events() {
		if e.Kind == kind {
			n++
		}
	}
	return n
}

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
		for _, e := range k.events() {
			switch e.Kind {
			case events.Elected:
				if open != nil {
					t.Errorf("%s: Elected (token %d) while term %d was not revoked", k.id, e.Token, open.token)
				}
				open = &term{id: k.id, token: e.Token, start: e.Time}
			case events.Revoked:
				if open == nil || open.token != e.Token {
					t.Errorf("%s: Revoked (token %d) without its Elected", k.id, e.Token)
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
