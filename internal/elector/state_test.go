package elector

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// State reports the last failure: the campaign's own calls' first, else
// its session's keep-alive's, and neither once a renewal succeeded.
func TestStateErrIsTheLastFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := newTestActor(t, t.Context())
		s := a.on.Session
		keepAlive, acquire := errors.New("keep-alive failed"), errors.New("acquire failed")
		cur := s.current()
		cur.failing = keepAlive
		s.renew(cur) // no campaign told
		if err := a.e.State().Err; err != keepAlive {
			t.Fatalf("State().Err = %v, want the session's %v", err, keepAlive)
		}
		a.e.mu.Lock()
		a.failed("acquire", acquire)
		a.e.mu.Unlock()
		if err := a.e.State().Err; err != acquire {
			t.Fatalf("State().Err = %v, want the campaign's own %v", err, acquire)
		}
		cur.failing, cur.renewed = nil, cur.renewed.Add(time.Second)
		s.set(cur)
		synctest.Wait()
		if err := a.e.State().Err; err != nil {
			t.Fatalf("State().Err = %v after a renewal, want nil", err)
		}
		stopTestActor(a)
	})
}

// Once a term has ended, State and the term's context report the deadline
// it had when it ended, however the session is renewed after.
func TestEndedTermKeepsItsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := newTestActor(t, t.Context())
		a.do(func() {}) // the acquire is due
		synctest.Wait()
		st := a.e.State()
		ctx, _, done, ok := a.e.Term(st.Token)
		if !st.Leader || !ok {
			t.Fatalf("not elected: %+v", st)
		}
		s := a.on.Session
		time.Sleep(time.Second)
		s.renew(shared{sess: a.on.sess, gen: a.on.gen, renewed: time.Now()})
		want := time.Now().Add(a.cfg().TTL - a.cfg().MarginFor(a.cfg().TTL))
		a.do(func() { a.resign(resignReq{done: make(chan error, 1)}) })
		time.Sleep(time.Second)
		s.renew(shared{sess: a.on.sess, gen: a.on.gen, renewed: time.Now()})
		if ctx.Err() == nil {
			t.Fatal("the term's context lives on after the term ended")
		}
		if got := a.e.State(); got.Leader || !got.Deadline.Equal(want) {
			t.Errorf("State() = leader %v, deadline %v; want no term, and the deadline it ended with, %v", got.Leader, got.Deadline, want)
		}
		if got, _ := ctx.Deadline(); !got.Equal(want) {
			t.Errorf("the ended term's context reports deadline %v, want %v", got, want)
		}
		done()
		stopTestActor(a)
	})
}
