package ledger

import (
	"maps"
	"testing"

	"github.com/hustings/hustings/events"
)

func TestLedger(t *testing.T) {
	var l Ledger
	if l.Lost() != nil || len(l.Held()) != 0 {
		t.Fatal("a new ledger holds something")
	}
	l.Granted("a", 1)
	l.Granted("b", 2)
	l.Gone("a", 1)
	if got := l.Lost(); !maps.Equal(got, map[string]events.Token{"a": 1}) {
		t.Fatalf("Lost() = %v, want a:1", got)
	}
	if got := l.Held(); !maps.Equal(got, map[string]events.Token{"b": 2}) {
		t.Fatalf("Held() = %v, want b:2 (a is lost)", got)
	}
	l.Gone("b", 1) // an older token: b was granted again since
	if _, ok := l.Lost()["b"]; ok {
		t.Fatal("b lost under a token it no longer holds")
	}
	l.Granted("a", 3) // acquired again: no longer lost
	if l.Lost() != nil {
		t.Fatalf("Lost() = %v after a was acquired again", l.Lost())
	}
	l.Released("b", 1) // a stale release: b is held under 2
	if got := l.Held(); got["b"] != 2 {
		t.Fatalf("Held() = %v after a stale release of b, want b:2 kept", got)
	}
	l.Gone("a", 3)
	l.Released("a", 3)
	if l.Lost() != nil || len(l.Held()) != 1 {
		t.Fatalf("after Release: Lost() = %v, Held() = %v", l.Lost(), l.Held())
	}
	l.Released("b", 0)
	if len(l.Held()) != 0 {
		t.Fatalf("Held() = %v after a release under any token", l.Held())
	}
}

func TestLossesSignalsWhatGoesToLost(t *testing.T) {
	var l Ledger
	ch := l.Losses()
	l.Granted("a", 1)
	l.Gone("a", 2) // not the token granted: nothing lost
	select {
	case <-ch:
		t.Fatal("signalled although nothing went to Lost")
	default:
	}
	l.Gone("a", 1)
	select {
	case <-ch:
	default:
		t.Fatal("no signal when a went to Lost")
	}
	if l.Losses() != ch {
		t.Error("Losses returned another channel")
	}
}
