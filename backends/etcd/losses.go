package etcd

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hustings/hustings/events"
)

// rewatchPause is how long the loss watch waits before it watches again
// after its watch broke; KeepAlive confirms the locks meanwhile.
const rewatchPause = time.Second

// Losses returns the channel of backends.Session.Losses. Its first call
// starts the session's loss watch: one etcd watch of every lock key of
// the Backend, which moves a lock of this session deleted or rewritten
// behind its back (an operator's delete or put, a revoke of the
// session's lease, its guard lease ending) to Lost as soon as the server
// pushes the change, within milliseconds, not at the next KeepAlive; and
// with which KeepAlive then confirms the locks without reading them. Its
// cost is one watch per session that asked, and one event to it for each
// write of a lock key by anyone (acquires and releases included); without
// the keys' previous values, which the server would read from its store
// for each event and each watch: a change of a name the session holds,
// at a revision after its token (the key's creation), is the end of the
// session's key. A goroutine of the session follows the watch until
// Close.
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
// revision after the session's lease was granted, before any lock of the
// session was taken, so no change is missed however late the watch is set
// up, and resumes where it stopped when the watch breaks (after a pause;
// KeepAlive reads the locks meanwhile), or from the oldest revision kept
// when it was compacted away (KeepAlive then reads the locks once, to
// cover what the watch skipped).
func (s *session) watchLosses(ctx context.Context) {
	rev := s.opened + 1
	for {
		next, compacted := s.followLosses(ctx, rev)
		if compacted {
			s.mark.skipped(next - 1)
		}
		rev = next
		if compacted {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(rewatchPause):
		}
	}
}

// followLosses watches the Backend's lock keys from rev until the watch
// ends, and returns the revision to resume from and whether the watch
// was compacted away. A revoke of the session's lease deletes its locks
// too, and they go to Lost at once, before KeepAlive reports the session
// lost.
func (s *session) followLosses(ctx context.Context, rev int64) (int64, bool) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the etcd watch when we stop following it
	wctx = clientv3.WithRequireLeader(wctx)
	locks := s.b.lockKey("")
	wch := s.b.client.Watch(wctx, locks, clientv3.WithRev(rev), clientv3.WithPrefix(), clientv3.WithCreatedNotify())
	var progress sync.WaitGroup
	defer progress.Wait()
	defer cancel()
	defer s.mark.follow(nil)
	progress.Go(func() { s.askProgressEvery(wctx) })
	for resp := range wch {
		switch {
		case resp.CompactRevision != 0:
			return resp.CompactRevision, true
		case resp.Created:
			s.mark.follow(wctx)
		case resp.IsProgressNotify():
			s.mark.advance(resp.Header.Revision)
			rev = max(rev, resp.Header.Revision+1)
		}
		for _, ev := range resp.Events {
			s.changed(strings.TrimPrefix(string(ev.Kv.Key), locks), events.Token(ev.Kv.ModRevision))
			rev = max(rev, ev.Kv.ModRevision+1)
		}
	}
	return rev, false
}

// changed records that a lock key was written or deleted at revision
// rev: key is its lock's name, or, for a guard key, the name, a NUL and
// the guard's lease in hex.
// GoneAt ignores a lock the session released itself (the ledger forgets
// it first), the writes of a name's keys before the session's (their
// revisions are at most its token: its own acquire wrote the key at the
// token), and a guard key of a lease the session's lock does not have.
func (s *session) changed(key string, rev events.Token) {
	name, g, guard := strings.Cut(key, "\x00")
	if guard {
		if id, err := strconv.ParseInt(g, 16, 64); err != nil || s.guard(name) != clientv3.LeaseID(id) {
			return
		}
	}
	s.ledger.GoneAt(name, rev)
}

// progressEvery is how often the loss watch asks the server for its
// progress.
const progressEvery = 5 * time.Second

// askProgressEvery asks the server, every progressEvery until ctx ends, to
// tell the loss watch the store's revision (KeepAlive asks at each of its
// calls too, while the watch confirms the locks). A watch of the lock keys
// alone otherwise keeps the revision of the last lock write it saw, and
// after the connection breaks (a server restart) the client resumes it
// from there: the server then replays every revision since, which after
// hours of other writes stalled a loaded server for seconds (seen in the
// chaos suite beside two CPU burners).
func (s *session) askProgressEvery(ctx context.Context) {
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
