package elector

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestRewatch walks a watch through its life: opened, broken, paused,
// opened again, a failed set-up, and a stop that ends the backend's watch.
func TestRewatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var r Rewatch
		if !r.Due(time.Now()) || r.C() != nil {
			t.Fatal("a zero Rewatch is not due, or has a watch")
		}
		var ended atomic.Int32
		fail := errors.New("refused")
		refuse := false
		watch := func(ctx context.Context, name string) (<-chan struct{}, error) {
			if refuse {
				return nil, fail
			}
			ch := make(chan struct{}, 1)
			ch <- struct{}{}
			context.AfterFunc(ctx, func() { ended.Add(1); close(ch) })
			return ch, nil
		}
		var wg sync.WaitGroup
		ctx := t.Context()
		if err := r.Open(ctx, ctx, watch, []string{"a"}, &wg, time.Second); err != nil {
			t.Fatal(err)
		}
		if r.C() == nil || r.Due(time.Now()) {
			t.Fatal("an open watch is not up, or another is due")
		}
		if _, ok := <-r.C(); !ok {
			t.Fatal("no signal from the watch")
		}

		r.Broken(time.Second)
		synctest.Wait()
		if r.C() != nil || ended.Load() != 1 {
			t.Fatalf("a broken watch: up %v, backend watches ended %d; want false, 1", r.C() != nil, ended.Load())
		}
		if r.Due(time.Now()) {
			t.Fatal("a new watch is due at once after a break, want after the pause")
		}
		time.Sleep(time.Second)
		if !r.Due(time.Now()) {
			t.Fatal("no new watch due after the pause")
		}

		refuse = true
		if err := r.Open(ctx, ctx, watch, []string{"a"}, &wg, 2*time.Second); !errors.Is(err, fail) {
			t.Fatalf("Open of a refused watch: %v, want %v", err, fail)
		}
		if r.Due(time.Now().Add(time.Second)) || !r.Due(time.Now().Add(2*time.Second)) {
			t.Fatal("a failed set-up is not paused for its pause")
		}

		time.Sleep(2 * time.Second)
		refuse = false
		if err := r.Open(ctx, ctx, watch, []string{"a", "b"}, &wg, time.Second); err != nil {
			t.Fatal(err)
		}
		r.Stop()
		wg.Wait()
		synctest.Wait()
		if r.C() != nil || ended.Load() != 3 || !r.Due(time.Now()) {
			t.Fatalf("after Stop: up %v, backend watches ended %d, due %v; want false, 3, true", r.C() != nil, ended.Load(), r.Due(time.Now()))
		}
	})
}
