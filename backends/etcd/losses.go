package etcd

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hustings/hustings/events"
)

// rewatchPause is how long the loss watch waits before it watches again
// after its watch broke; KeepAlive confirms the locks meanwhile.
const rewatchPause = time.Second

// Losses returns the channel of backends.LossNotifier. Its first call
// starts the session's loss watch: one etcd watch, for deletes only, of
// every key of the Backend, which moves a lock of this session deleted
// behind its back (an operator's delete, a revoke of the session's lease)
// to Lost as soon as the server pushes the delete, within milliseconds,
// not at the next KeepAlive. Its cost is one watch per session that
// asked, and one event to it for each lock deleted by anyone (a release
// included); without the keys' previous values, which the server would
// read from its store for each event and each watch: a delete of a name
// the session holds, at a revision after its token (the key's creation),
// is the end of the session's key. A goroutine of the session
// follows the watch until Close.
func (s *session) Losses() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.unwatch == nil && !s.closed {
		ctx, cancel := context.WithCancel(s.b.client.Ctx())
		s.unwatch = cancel
		s.watcher.Go(func() { s.watchLosses(ctx) })
	}
	return s.ledger.Losses()
}

// watchLosses follows the loss watch until ctx ends. It watches from the
// revision after the session was opened, so no delete is missed however
// late the watch is set up, and resumes where it stopped when the watch
// breaks (after a pause; KeepAlive confirms the locks meanwhile), or from
// the oldest revision kept when it was compacted away.
func (s *session) watchLosses(ctx context.Context) {
	rev := s.opened + 1
	for {
		next, end := s.followLosses(ctx, rev)
		rev = next
		switch end {
		case compacted:
			continue
		case sessionGone:
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(rewatchPause):
		}
	}
}

// How a loss watch ended.
const (
	broken      = iota // the watch failed or ctx ended
	compacted          // the revision to resume from was compacted away
	sessionGone        // the session's lease ended
)

// followLosses watches the Backend's deletes from rev until the watch
// ends, and returns the revision to resume from and how it ended. A
// revoke of the session's lease deletes its locks too, and they go to
// Lost at once, before KeepAlive reports the session lost; the watch ends
// with the session's own key.
func (s *session) followLosses(ctx context.Context, rev int64) (int64, int) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the etcd watch when we stop following it
	wctx = clientv3.WithRequireLeader(wctx)
	locks := s.b.lockKey("")
	wch := s.b.client.Watch(wctx, s.b.prefix, clientv3.WithRev(rev),
		clientv3.WithPrefix(), clientv3.WithFilterPut())
	var progress sync.WaitGroup
	defer progress.Wait()
	defer cancel()
	progress.Go(func() { s.askProgress(wctx) })
	for resp := range wch {
		if resp.CompactRevision != 0 {
			return resp.CompactRevision, compacted
		}
		for _, ev := range resp.Events {
			name, ok := strings.CutPrefix(string(ev.Kv.Key), locks)
			if !ok {
				continue
			}
			// GoneAt ignores a lock the session released itself (the
			// ledger forgets it first), and the deletes of a name's keys
			// older than the session's (their revisions are below its
			// token). A guard key's name holds a NUL: no lock has it.
			s.ledger.GoneAt(name, events.Token(ev.Kv.ModRevision))
		}
		if slices.ContainsFunc(resp.Events, func(ev *clientv3.Event) bool { return string(ev.Kv.Key) == s.key }) {
			return rev, sessionGone // nothing more to watch
		}
		rev = max(rev, resp.Header.Revision+1)
	}
	return rev, broken
}

// progressEvery is how often the loss watch asks the server for its
// progress.
const progressEvery = 5 * time.Second

// askProgress asks the server, every progressEvery until ctx ends, to tell
// the loss watch the store's revision. A watch that only sees deletes
// otherwise keeps the revision of the last delete it saw, and after the
// connection breaks (a server restart) the client resumes it from there:
// the server then replays every revision since, which after hours of puts
// stalled a loaded server for seconds (seen in the chaos suite beside two
// CPU burners).
func (s *session) askProgress(ctx context.Context) {
	t := time.NewTicker(progressEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_ = s.b.client.RequestProgress(ctx) // a failure: the next tick asks again
		}
	}
}
