package group_test

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hustings/hustings/backends/memory"
)

// A slot won by an answer that came after the campaign's deadline was
// spent (the keep-alives meanwhile applied by the server, their answers
// lost) starts no term, so the campaign must not keep it: when its next
// try wins another slot first, the late one is let go, not left held by
// the live session for nobody under a token no Elected carried (as after a
// Redis restart that makes keep-alives fail while an acquire is in
// flight).
func TestSlotWonAfterTheDeadlineIsNotKeptForNobody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		b := &spy{Backend: memory.New(), id: "waiter"}
		holders, w := heldAndWaiting(t, b)
		asked := b.since(&b.asked, 0)
		holderOf := func(name string) *member {
			i := slices.IndexFunc(holders, func(m *member) bool { return rollups[m.g.State().Slot] == name })
			if i < 0 {
				t.Fatalf("no holder of %s", name)
			}
			return holders[i]
		}
		// The waiter asks asked[0] first. Free the slot it asks second and
		// answer its acquire late; meanwhile free the first one too, so
		// that its next try wins that one first.
		first, second := asked[0], asked[1]
		b.answerLate(second)
		holderOf(second).stop(t)
		synctest.Wait() // the waiter is woken, asks for second, and waits for its answer
		if !b.isStalled() {
			t.Fatalf("woken by the release of %s, the waiter asked for %v", second, b.since(&b.asked, len(asked)))
		}
		holderOf(first).stop(t)
		// The late answer (lateBy), the next keep-alive (a retry interval,
		// an hour, after the failed ones), the next try and its leaving.
		time.Sleep(2 * time.Hour)
		synctest.Wait()

		s := w.g.State()
		mine := rollups[s.Slot]
		if !s.Leader || mine != first {
			// Leading second would mean its answer came in time: the
			// fault this test is about did not happen.
			t.Fatalf("the waiter's state is %+v; want it to lead %s, the slot its next try asks first", s, first)
		}
		for _, name := range []string{first, second} {
			h, err := b.Holder(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case name == mine && (h.ID != "waiter" || h.Token != s.Token):
				t.Errorf("%s: the waiter leads it under token %d, the server says %+v", name, s.Token, h)
			case name != mine && h.ID != "":
				t.Errorf("%s held by %s under token %d for nobody: the waiter leads %s", name, h.ID, h.Token, mine)
			}
		}
		for _, m := range append(holders, w) {
			m.stop(t)
		}
	})
}
