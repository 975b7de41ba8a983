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
	granted chan struct{} // signalled (buffer 1) when an Acquire grants a lock
	done    chan struct{} // closed when the watch's goroutine returns
}

// Losses returns the channel of backends.LossNotifier. Its first call
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

// granted tells the loss watch, if any, of a lock just granted. s.mu must
// be held.
func (s *session) tellGranted() {
	if s.watch == nil {
		return
	}
	select {
	case s.watch.granted <- struct{}{}:
	default:
	}
}

// stopWatch stops the loss watch, if any, and waits for its goroutine.
func (s *session) stopWatch() {
	s.mu.Lock()
	w := s.watch
	s.mu.Unlock()
	if w != nil {
		w.cancel()
		<-w.done
	}
}

// watchLosses watches the nodes of the session's granted locks until ctx
// ends. A watch fires once: a deleted node's lock goes to Lost (unless
// the session released it meanwhile, which Lost ignores); any other event
// (a data change, a watch the client dropped) sets the watch again.
func (s *session) watchLosses(ctx context.Context, w *lossWatch) {
	defer close(w.done)
	watched := map[*lock]<-chan zk.Event{}
	for {
		retry := s.watchGranted(ctx, watched)
		locks, cases := s.lossCases(ctx, w, watched, retry)
		chosen, v, _ := reflect.Select(cases)
		switch {
		case chosen == 0:
			return
		case chosen >= 3:
			l := locks[chosen-3]
			delete(watched, l)
			if ev, _ := v.Interface().(zk.Event); ev.Type == zk.EventNodeDeleted {
				s.lose(l)
			}
		}
	}
}

// watchGranted sets a watch on the node of each granted lock not watched
// yet, watchBatch at a time (go-zookeeper pipelines them on its one
// connection: 10,000 one after another took 15 s here), and reports
// whether one could not be set (to try again later). A node already gone
// is lost at once.
func (s *session) watchGranted(ctx context.Context, watched map[*lock]<-chan zk.Event) (retry bool) {
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
				errs[i] = s.b.call(ctx, "watch "+l.path, func() (err error) {
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
				watched[l] = chans[i]
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

// lossCases returns the cases the loss watch waits on: ctx, a grant, a
// pause before trying again (if retry), then one per watched node, whose
// locks it returns in the same order.
func (s *session) lossCases(ctx context.Context, w *lossWatch, watched map[*lock]<-chan zk.Event, retry bool) ([]*lock, []reflect.SelectCase) {
	var pause <-chan time.Time
	if retry {
		pause = time.After(rewatchPause)
	}
	cases := []reflect.SelectCase{
		{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())},
		{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(w.granted)},
		{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(pause)},
	}
	locks := make([]*lock, 0, len(watched))
	for l, ch := range watched {
		locks = append(locks, l)
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)})
	}
	return locks, cases
}
