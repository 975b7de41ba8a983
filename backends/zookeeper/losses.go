package zookeeper

import (
	"context"
	"reflect"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// rewatchPause is how long the loss watch waits before it tries again to
// watch a lock's node after the server did not answer; KeepAlive
// confirms the locks meanwhile.
const rewatchPause = time.Second

// lossWatch is the state a session's loss watch shares with Acquire.
type lossWatch struct {
	cancel  context.CancelFunc
	granted chan struct{} // signalled (buffer 1) grantSettle after an Acquire granted a lock
	done    chan struct{} // closed when the watch's goroutine returns
	// settle signals granted once the grants since due was set have
	// settled: made at the first grant and reused (a loop of runs on a
	// session sets it at each). due is when it is to signal, zero when
	// no signal is pending. Both guarded by the session's mu.
	settle *time.Timer
	due    time.Time
}

// Losses returns the channel of backends.Session.Losses. Its first call
// starts the session's loss watch: a goroutine of the session that sets an
// exists watch on the node of every lock an Acquire grants the session
// (one round trip each, after the grant, off the Acquire's path), and
// moves a lock whose node is deleted behind the session's back (an
// operator's delete) to Lost as soon as the server pushes the delete.
// Close stops it.
func (s *session) Losses() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.watch == nil && !s.closed {
		ctx, cancel := context.WithCancel(context.Background())
		s.watch = &lossWatch{cancel: cancel, granted: make(chan struct{}, 1), done: make(chan struct{})}
		go s.watchLosses(ctx, s.watch)
	}
	return s.ledger.Losses()
}

// tellGranted tells the loss watch, if any, of a lock just granted, once
// grantSettle has passed (see grantSettle): a timer, so that the grant
// wakes no goroutine. s.mu must be held.
func (s *session) tellGranted() {
	w := s.watch
	if w == nil || !w.due.IsZero() {
		return
	}
	w.due = time.Now().Add(s.b.grantSettle)
	if w.settle == nil {
		w.settle = time.AfterFunc(s.b.grantSettle, func() { s.settle(w) })
	} else {
		w.settle.Reset(s.b.grantSettle)
	}
}

// settle signals w.granted when the timer set by tellGranted fires,
// unless settled stopped it (a firing that had begun as it did finds due
// zero, or set again for later).
func (s *session) settle(w *lossWatch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w.due.IsZero() || time.Now().Before(w.due) {
		return
	}
	w.due = time.Time{}
	signal(w.granted)
}

// settled stops the loss watch's settling timer, if a signal is pending:
// the locks it was set for are all released already. s.mu must be held.
func (s *session) settled() {
	if w := s.watch; w != nil && !w.due.IsZero() {
		w.settle.Stop()
		w.due = time.Time{}
	}
}

// stopWatch stops the loss watch, if any, and waits for its goroutine.
func (s *session) stopWatch() {
	s.mu.Lock()
	w := s.watch
	s.settled()
	s.mu.Unlock()
	if w != nil {
		w.cancel()
		<-w.done
	}
}

// shardSize is how many nodes one shard of the loss watch waits on: a
// goroutine whose reflect.Select has a case per node (reflect.Select takes
// at most 65,536, and its cost grows with the cases at every wake-up). A
// session holding 100,000 locks runs 98 shards.
const shardSize = 1024

// shard is one goroutine of the loss watch and the nodes it waits on.
type shard struct {
	add chan watchedNode // buffer 1: the shard takes a node between wake-ups
	n   int              // nodes it waits on; the watch's loop's own count
}

// watchedNode is a lock's node and its exists watch.
type watchedNode struct {
	l  *lock
	ch <-chan zk.Event
}

// fired collects the locks whose watch fired, from the shards, for the
// watch's loop to set again if they are still granted.
type fired struct {
	mu    sync.Mutex
	locks []*lock
	wake  chan struct{} // buffer 1
}

func (f *fired) put(l *lock) {
	f.mu.Lock()
	f.locks = append(f.locks, l)
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *fired) take() []*lock {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.locks
	f.locks = nil
	return out
}

// watchLosses watches the nodes of the session's granted locks until ctx
// ends: it sets an exists watch on each and hands it to a shard. A watch
// fires once: a deleted node's lock goes to Lost (unless the session
// released it meanwhile, which Lost ignores); any other event (a data
// change, a watch the client dropped) sets the watch again.
func (s *session) watchLosses(ctx context.Context, w *lossWatch) {
	defer close(w.done)
	var shards sync.WaitGroup
	defer shards.Wait()
	f := &fired{wake: make(chan struct{}, 1)}
	watched := map[*lock]*shard{}
	var open []*shard // shards with room
	place := func(n watchedNode) {
		if len(open) == 0 {
			sh := &shard{add: make(chan watchedNode, 1)}
			open = append(open, sh)
			shards.Go(func() { s.runShard(ctx, sh, f) })
		}
		sh := open[len(open)-1]
		select {
		case sh.add <- n:
		case <-ctx.Done(): // the shard may have returned: its buffer of one fills
			return
		}
		watched[n.l] = sh
		if sh.n++; sh.n == shardSize {
			open = open[:len(open)-1]
		}
	}
	for {
		retry := s.watchGranted(ctx, watched, place)
		var pause <-chan time.Time
		if retry {
			pause = time.After(rewatchPause)
		}
		select {
		case <-ctx.Done():
			return
		case <-w.granted:
		case <-pause:
		case <-f.wake:
			for _, l := range f.take() {
				sh := watched[l]
				delete(watched, l)
				if sh.n--; sh.n == shardSize-1 {
					open = append(open, sh)
				}
			}
		}
	}
}

// grantSettle is how long the loss watch lets a grant settle before it
// watches the lock's node: a lock released by then (a short one-shot run
// on a session) needs no watch, which would cost a round trip sent just
// before the release; grants that come meanwhile are watched together.
// A node deleted meanwhile is found gone when the watch is set, so a loss
// is still noticed within milliseconds. The Backend's default.
const grantSettle = 5 * time.Millisecond

// runShard waits on the watches placed in sh until ctx ends.
func (s *session) runShard(ctx context.Context, sh *shard, f *fired) {
	cases := []reflect.SelectCase{
		{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())},
		{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(sh.add)},
	}
	var locks []*lock // locks[i] is the lock of cases[i+2]
	for {
		chosen, v, ok := reflect.Select(cases)
		switch chosen {
		case 0:
			return
		case 1:
			n := v.Interface().(watchedNode)
			locks = append(locks, n.l)
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(n.ch)})
		default:
			i, last := chosen-2, len(locks)-1
			l := locks[i]
			locks[i], locks = locks[last], locks[:last]
			cases[chosen], cases = cases[len(cases)-1], cases[:len(cases)-1]
			if ev, _ := v.Interface().(zk.Event); ok && ev.Type == zk.EventNodeDeleted {
				s.lose(l)
			}
			f.put(l)
		}
	}
}

// watchGranted sets a watch on the node of each granted lock not watched
// yet, watchBatch at a time (go-zookeeper pipelines them on its one
// connection: 10,000 one after another took 15 s here), and reports
// whether one could not be set (to try again later). A node already gone
// is lost at once.
func (s *session) watchGranted(ctx context.Context, watched map[*lock]*shard, place func(watchedNode)) (retry bool) {
	var todo []*lock
	for _, l := range s.granted() {
		if _, ok := watched[l]; !ok {
			todo = append(todo, l)
		}
	}
	for len(todo) > 0 && ctx.Err() == nil {
		batch := todo[:min(len(todo), watchBatch)]
		todo = todo[len(batch):]
		chans := make([]<-chan zk.Event, len(batch))
		errs := make([]error, len(batch))
		exists := make([]bool, len(batch))
		var wg sync.WaitGroup
		for i, l := range batch {
			wg.Go(func() {
				errs[i] = s.b.call(ctx, "watch", l.path, func() (err error) {
					exists[i], _, chans[i], err = s.b.conn.ExistsW(l.path)
					return err
				})
			})
		}
		wg.Wait()
		for i, l := range batch {
			switch {
			case errs[i] != nil:
				retry = true
			case !exists[i]:
				s.lose(l)
			default:
				place(watchedNode{l: l, ch: chans[i]})
			}
		}
	}
	return retry
}

// watchBatch is how many exists watches the loss watch sets at once.
const watchBatch = 64

// granted returns the session's locks an Acquire granted.
func (s *session) granted() []*lock {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*lock
	for _, l := range s.locks {
		if l.granted {
			out = append(out, l)
		}
	}
	return out
}
