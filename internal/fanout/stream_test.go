package fanout

import (
	"fmt"
	"github.com/hustings/hustings/events"
	"math/rand/v2"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func elected(tok events.Token) events.Event {
	return events.Event{Kind: events.Elected, Name: "n", Holder: "a", Token: tok}
}
func revoked(tok events.Token) events.Event {
	return events.Event{Kind: events.Revoked, Name: "n", Holder: "a", Token: tok, Reason: fmt.Errorf("r%d: %w", tok, events.ErrLeaseExpired)}
}

// pump offers events the way an owner's select loop does, without blocking.
func pump(s *Stream) {
	for {
		ch, e := s.Ready()
		if ch == nil {
			return
		}
		select {
		case ch <- e:
			s.Sent()
		default:
			return
		}
	}
}

// read receives what the subscriber can get right now, letting the owner
// offer follow-ups in between, as a reader racing a live owner would.
func read(s *Stream) []events.Event {
	var got []events.Event
	for {
		pump(s)
		select {
		case e, ok := <-s.C():
			if !ok {
				return got
			}
			got = append(got, e)
		default:
			return got
		}
	}
}

func kinds(es []events.Event) string {
	out := ""
	for _, e := range es {
		out += fmt.Sprintf("%s(%d) ", e.Kind, e.Token)
	}
	return out
}

func publish(s *Stream, es ...events.Event) {
	for _, e := range es {
		s.Publish(e)
		pump(s)
	}
}

func TestStreamCoalesces(t *testing.T) {
	tests := []struct {
		name    string
		before  []events.Event // published before the first read
		after   []events.Event // published after it
		want    string         // everything the subscriber receives
		dropped uint64
	}{
		{"nothing", nil, nil, "", 0},
		{"one term", []events.Event{elected(1)}, nil, "elected(1) ", 0},
		{"term begun and ended unread", []events.Event{elected(1), revoked(1)}, nil, "", 2},
		{"latest term wins", []events.Event{elected(1), revoked(1), elected(2)}, nil, "elected(2) ", 2},
		{"revoked kept before next elected", []events.Event{elected(1)}, []events.Event{revoked(1), elected(2), revoked(2), elected(3)}, "elected(1) revoked(1) elected(3) ", 2},
		{"revoked of known term survives", []events.Event{elected(1)}, []events.Event{revoked(1), elected(2), revoked(2)}, "elected(1) revoked(1) ", 2},
		{"no revoked for an unknown term", []events.Event{revoked(7)}, nil, "", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewStream()
			publish(s, tt.before...)
			got := read(s)
			publish(s, tt.after...)
			got = append(got, read(s)...)
			if k := kinds(got); k != tt.want {
				t.Errorf("received %q, want %q", k, tt.want)
			}
			if d := s.Dropped(); d != tt.dropped {
				t.Errorf("Dropped() = %d, want %d", d, tt.dropped)
			}
		})
	}
}

func TestStreamRevokedKeepsItsReason(t *testing.T) {
	s := NewStream()
	publish(s, elected(1))
	read(s)
	r := revoked(1)
	publish(s, r, elected(2), revoked(2), elected(3))
	got := read(s)
	if len(got) != 2 || got[0].Reason != r.Reason || got[1].Token != 3 {
		t.Fatalf("got %s, want revoked(1) with its own reason, then elected(3)", kinds(got))
	}
}

func TestStreamObserverGetsLatestHolder(t *testing.T) {
	s := NewStream()
	for i, h := range []string{"a", "", "b", "c"} {
		publish(s, events.Event{Kind: events.LeaderChanged, Name: "n", Holder: h, Token: events.Token(i)})
	}
	got := read(s)
	if len(got) != 1 || got[0].Holder != "c" {
		t.Fatalf("observer received %v, want only the latest holder c", got)
	}
	if s.Dropped() != 3 {
		t.Fatalf("Dropped() = %d, want 3", s.Dropped())
	}
}

func TestStreamCloseLeavesTheOwedRevoked(t *testing.T) {
	s := NewStream()
	publish(s, elected(1))
	read(s)
	s.Publish(revoked(1))
	s.Close()
	s.Close() // idempotent
	s.Publish(elected(2))
	got := read(s)
	if kinds(got) != "revoked(1) " {
		t.Fatalf("after Close received %q, want the owed revoked(1)", kinds(got))
	}
	if _, ok := <-s.C(); ok {
		t.Fatal("channel not closed after Close")
	}
	if ch, _ := s.Ready(); ch != nil {
		t.Fatal("Ready offers a send on a closed stream")
	}
}

func TestStreamCloseDropsUnreadTerm(t *testing.T) {
	s := NewStream()
	publish(s, elected(1), revoked(1))
	s.Close()
	if got := read(s); len(got) != 0 {
		t.Fatalf("received %s for a term the subscriber never saw", kinds(got))
	}
}

// checkPairing fails if got breaks the event contract: every events.Elected(t) is
// followed by events.Revoked(t) before any other events.Elected, tokens increase, and no
// events.Revoked arrives for a term the subscriber was not told of.
func checkPairing(t *testing.T, got []events.Event) {
	t.Helper()
	open := false
	var last events.Token
	for i, e := range got {
		switch {
		case e.Kind == events.Elected && !open && e.Token > last:
			open, last = true, e.Token
		case e.Kind == events.Revoked && open && e.Token == last:
			open = false
		default:
			t.Fatalf("event %d (%s) breaks pairing: %s", i, e, kinds(got))
		}
	}
}

func TestStreamPairingRandomised(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 500 {
		s := NewStream()
		var got []events.Event
		var tok events.Token
		leading := false
		for range 40 {
			if rng.IntN(3) == 0 {
				got = append(got, read(s)...)
			}
			if leading {
				publish(s, revoked(tok))
			} else {
				tok++
				publish(s, elected(tok))
			}
			leading = !leading
		}
		got = append(got, read(s)...)
		checkPairing(t, got)
		if leading && got[len(got)-1].Token != tok {
			t.Fatalf("round %d: last received %s, want the current term %d", round, kinds(got), tok)
		}
	}
}

func TestStreamConcurrentReader(t *testing.T) {
	s := NewStream()
	var got []events.Event
	var wg sync.WaitGroup
	wg.Go(func() {
		for e := range s.C() {
			got = append(got, e)
		}
	})
	const terms = 20000
	for tok := events.Token(1); tok <= terms; tok++ {
		publish(s, elected(tok))
		publish(s, revoked(tok))
	}
	s.Close()
	wg.Wait()
	checkPairing(t, got)
	if len(got)%2 != 0 {
		t.Fatalf("received %d events: a term was left open at Close", len(got))
	}
	if uint64(len(got))+s.Dropped() != 2*terms {
		t.Fatalf("received %d + dropped %d, want the %d published", len(got), s.Dropped(), 2*terms)
	}
}
