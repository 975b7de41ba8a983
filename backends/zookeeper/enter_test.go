package zookeeper

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/hustings/hustings/backends"
)

// TestEnterTakesTurnsPerName: calls of a session on one name take turns,
// each let in when the one before it leaves, even several waiting at
// once; calls on other names do not wait; a waiting call whose context
// ends gives up with ErrUnavailable.
func TestEnterTakesTurnsPerName(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &session{busy: make(map[string]chan struct{})}
		ctx := t.Context()
		if err := s.enter(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		if err := s.enter(ctx, "b"); err != nil { // another name: at once
			t.Fatal(err)
		}
		in := make(chan int, 2)
		for i := range 2 {
			go func() {
				if err := s.enter(ctx, "a"); err != nil {
					t.Error(err)
					return
				}
				in <- i
			}()
		}
		gctx, cancel := context.WithCancel(ctx)
		gaveUp := make(chan error, 1)
		go func() { gaveUp <- s.enter(gctx, "a") }()
		synctest.Wait()
		if len(in) != 0 {
			t.Fatal("a call on a was let in while another was in")
		}
		cancel()
		synctest.Wait()
		if err := <-gaveUp; !errors.Is(err, backends.ErrUnavailable) || !errors.Is(err, context.Canceled) {
			t.Fatalf("a waiting call whose context ended: %v, want ErrUnavailable and context.Canceled", err)
		}
		for range 2 {
			s.leave("a")
			synctest.Wait()
			if len(in) != 1 {
				t.Fatalf("%d calls let in after a leave, want 1", len(in))
			}
			<-in
		}
		s.leave("a")
		s.leave("b")
		if len(s.busy) != 0 {
			t.Fatalf("busy = %v once every call left, want empty", s.busy)
		}
	})
}
