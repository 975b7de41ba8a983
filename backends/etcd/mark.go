package etcd

import (
	"context"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// progressWait bounds how long KeepAlive waits for the loss watch to
// report its progress before it confirms the locks by reading them
// instead; progressRetry is how often it asks again meanwhile: etcd
// drops a progress request while a watch of the stream is catching up.
const (
	progressWait  = 500 * time.Millisecond
	progressRetry = 100 * time.Millisecond
)

// mark is how far the session's loss watch has seen the lock keys: every
// change of a lock key after the session opened and up to rev went to the
// ledger, unless gap says some may be missing. Only the server's progress
// notifications move it: a watch's events can come in batches whose
// revision runs ahead of the events sent so far.
type mark struct {
	mu    sync.Mutex
	ctx   context.Context // the established watch's: progress requests go to its stream; nil without one
	rev   int64
	gap   int64         // > 0: changes up to gap may have been missed (compaction); a read at gap or later covers them
	moved chan struct{} // closed when rev moves, then replaced
}

// follow records that the loss watch is established under ctx (nil: it
// is not).
func (m *mark) follow(ctx context.Context) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ctx = ctx
}

// advance records a progress notification: the watch has seen every
// change up to rev.
func (m *mark) advance(rev int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if rev <= m.rev {
		return
	}
	m.rev = rev
	if m.moved != nil {
		close(m.moved)
		m.moved = nil
	}
}

// skipped records that the watch resumed after revision gap, so changes
// up to gap may not have reached the ledger.
func (m *mark) skipped(gap int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gap = max(m.gap, gap)
}

// read records that a read at revision rev confirmed every lock: it
// covers whatever the watch skipped up to rev.
func (m *mark) read(rev int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.gap <= rev {
		m.gap = 0
	}
}

// state returns the watch's ctx (nil if none, or if it skipped changes),
// its revision, and a channel closed when the revision moves.
func (m *mark) state() (context.Context, int64, <-chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ctx == nil || m.gap > 0 {
		return nil, 0, nil
	}
	if m.moved == nil {
		m.moved = make(chan struct{})
	}
	return m.ctx, m.rev, m.moved
}

// usable reports whether the loss watch can confirm the locks: it is
// established and has skipped nothing.
func (m *mark) usable() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ctx != nil && m.gap == 0
}

// reach asks the loss watch's stream for its progress until the watch
// has seen every change up to rev, and reports whether it did within
// progressWait (and before ctx ended, and while the watch lasted). The
// requests are bounded by progressWait too: a congested stream cannot
// hold a KeepAlive longer than that.
func (s *session) reach(ctx context.Context, rev int64) bool {
	ctx, cancel := context.WithTimeout(ctx, progressWait)
	defer cancel()
	retry := time.NewTicker(progressRetry)
	defer retry.Stop()
	for asked := false; ; {
		wctx, seen, moved := s.mark.state()
		switch {
		case wctx == nil:
			return false
		case seen >= rev:
			return true
		case !asked:
			s.askProgress(ctx, wctx)
			asked = true
		}
		select {
		case <-moved:
			asked = false // the answer came, but not far enough
		case <-retry.C:
			asked = false
		case <-ctx.Done():
			return false
		}
	}
}

// askProgress asks the stream of the watch of wctx to report its
// progress, giving up when ctx or wctx ends.
func (s *session) askProgress(ctx, wctx context.Context) {
	actx, cancel := context.WithCancel(wctx) // wctx's metadata names the stream
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	_ = s.b.client.RequestProgress(actx) // unanswered: asked again, or read instead
}

// linearRevision returns a revision of the store no older than the
// call: the header of a linearizable read of the session key.
func (s *session) linearRevision(ctx context.Context) (int64, error) {
	resp, err := s.b.client.Get(ctx, s.key, clientv3.WithCountOnly())
	if err != nil {
		return 0, translate(ctx, "keep-alive: read the revision", err)
	}
	return resp.Header.Revision, nil
}
