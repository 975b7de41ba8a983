package elector

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// A renewal's keep-alive goroutine never waits for the campaigns to take
// it in: set returns while a campaign's lock is held (on a starved
// machine, telling ten thousand campaigns took longer than the TTL, the
// next keep-alive came too late, and the session expired, again and
// again), and the campaign takes the renewal in once its lock is free.
func TestSetDoesNotWaitForCampaigns(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := newTestActor(t, ctx)
	s := a.on.Session
	renewed := s.current().renewed.Add(time.Second)
	a.e.mu.Lock() // the campaign is busy
	set := make(chan struct{})
	go func() {
		cur := s.current()
		cur.renewed = renewed
		s.set(cur)
		close(set)
	}()
	select {
	case <-set:
	case <-time.After(10 * time.Second):
		a.e.mu.Unlock()
		t.Fatal("set still waits for a busy campaign after 10s")
	}
	a.e.mu.Unlock()
	bound := time.Now().Add(10 * time.Second)
	for {
		a.e.mu.Lock()
		got := a.on.renewed
		a.e.mu.Unlock()
		if got.Equal(renewed) {
			break
		}
		if time.Now().After(bound) {
			t.Fatalf("the campaign's renewal is %v after 10s, want %v", got, renewed)
		}
		time.Sleep(time.Millisecond)
	}
	stopTestActor(a)
}

// A renewal tells no campaign (Session.renew), yet State and the term's
// context report the deadline it gives at once, and at the deadline the
// campaign had, the term is extended to it, not revoked.
func TestDeadlineReadsTheSessionsLastRenewal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		a := newTestActor(t, ctx)
		a.do(func() {}) // the acquire is due
		synctest.Wait()
		st := a.e.State()
		if !st.Leader {
			t.Fatalf("not elected: %+v", st)
		}
		s := a.on.Session
		time.Sleep(time.Until(st.Deadline) / 2)
		ctx, _, done, ok := a.e.Term(st.Token)
		if !ok {
			t.Fatal("no term to bind work to")
		}
		defer done()
		s.renew(shared{sess: a.on.sess, gen: a.on.gen, renewed: time.Now()}) // no campaign told
		renewed := time.Now()
		want := renewed.Add(a.cfg().TTL - a.cfg().MarginFor(a.cfg().TTL))
		if got := a.e.State().Deadline; !got.Equal(want) {
			t.Errorf("State's deadline right after the renewal %v, want the renewal's, %v", got, want)
		}
		if got, _ := ctx.Deadline(); !got.Equal(want) {
			t.Errorf("the term context's deadline right after the renewal %v, want the renewal's, %v", got, want)
		}
		time.Sleep(time.Until(st.Deadline) + time.Millisecond)
		synctest.Wait()
		now := a.e.State()
		if !now.Leader || now.Token != st.Token {
			t.Fatalf("the term ended at its old deadline though the session was renewed: %+v", now)
		}
		a.e.mu.Lock()
		termDeadline := a.term.live()
		a.e.mu.Unlock()
		if !now.Deadline.Equal(want) || !termDeadline.Equal(want) {
			t.Errorf("deadline %v (the term's %v), want the last renewal's, %v", now.Deadline, termDeadline, want)
		}
		stopTestActor(a)
	})
}
