package nats

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/validate"
)

// Watch signals when the holder of name may have changed: every write to
// the lock's record (a take, a release, a hold, a lease's expiry, a
// delete by hand), and the end of its holder's session record (an
// expiry: a crashed holder; a Close). It returns once the bucket's feed
// is consumed, so no change after Watch returned is missed. Signals
// coalesce in a buffer of one.
//
// Every watch of a Backend, and every session's pushed losses, share one
// feed of the whole bucket (one ordered consumer on the server, one
// subscription), which exists while at least one of them does. The
// Backend closes the channel when ctx ends, or when the feed ends (the
// connection closed); then every watch's channel is closed.
func (b *Backend) Watch(ctx context.Context, name string) (<-chan struct{}, error) {
	return b.watch(ctx, name, false)
}

// WatchReleases is Watch for a candidate waiting for name: it signals
// only the writes that may free the lock (a removal, a lease's or hold's
// expiry, a delete by hand: the markers on its record) and the end of
// its holder's session record, not a take.
func (b *Backend) WatchReleases(ctx context.Context, name string) (<-chan struct{}, error) {
	return b.watch(ctx, name, true)
}

func (b *Backend) watch(ctx context.Context, name string, releases bool) (<-chan struct{}, error) {
	if err := validate.Name(name); err != nil {
		return nil, err
	}
	if err := b.ready(ctx, "watch"); err != nil {
		return nil, err
	}
	w := b.hub.add(LockKey(name), releases)
	if err := b.hub.start(ctx); err != nil {
		b.hub.end(w)
		return nil, b.failed(ctx, "watch", err)
	}
	// Learn the holder's session, whose end frees the lock with no write
	// to its record; later holders come with the feed.
	if e, err := b.b.get(ctx, w.key); err == nil {
		b.hub.learn(w.key, e.live, e.value)
	}
	w.stop = context.AfterFunc(ctx, func() { b.hub.end(w) })
	return w.ch, nil
}

// hub multiplexes the watches and the loss notifications of one Backend
// over one feed of the bucket.
type hub struct {
	b       *bucket
	startMu sync.Mutex // one start at a time

	mu       sync.Mutex
	feed     *feed
	watches  map[string]map[*watch]struct{} // by lock key
	holders  map[string]string              // lock key → its holder's session key, for watched locks
	sessions map[*session]struct{}          // those whose losses are pushed
	// monitored is closed when the running feed's monitor has ended;
	// stopIfIdle waits for it, so the hub's goroutines end with its feed.
	monitored chan struct{}

	// What the running feed covers, for KeepAlive's confirmation.
	gen      uint64            // the number of the running feed (counts starts)
	first    uint64            // the first revision it delivered; 0: none yet
	seen     uint64            // the last
	progress chan struct{}     // closed at its next delivery
	lockRevs map[string]uint64 // lock key → the last revision it delivered
}

// watch is one Watch call's channel; the hub closes it exactly once.
type watch struct {
	key      string
	releases bool // signalled only when the lock may have become free
	ch       chan struct{}
	stop     func() bool // unregisters the ctx callback
}

// add registers a watch of a lock key.
func (h *hub) add(key string, releases bool) *watch {
	w := &watch{key: key, releases: releases, ch: make(chan struct{}, 1), stop: func() bool { return false }}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.watches == nil {
		h.watches, h.holders = map[string]map[*watch]struct{}{}, map[string]string{}
	}
	if h.watches[key] == nil {
		h.watches[key] = map[*watch]struct{}{}
	}
	h.watches[key][w] = struct{}{}
	return w
}

// start makes the feed if there is none.
func (h *hub) start(ctx context.Context) error {
	h.startMu.Lock()
	defer h.startMu.Unlock()
	h.mu.Lock()
	running := h.feed != nil
	h.mu.Unlock()
	if running {
		return nil
	}
	h.mu.Lock()
	h.gen++
	h.first, h.seen, h.lockRevs = 0, 0, map[string]uint64{}
	h.mu.Unlock()
	f, err := h.b.watchAll(ctx, h.deliver)
	if err != nil {
		return err
	}
	h.mu.Lock()
	h.feed = f
	monitored := make(chan struct{})
	h.monitored = monitored
	go func() {
		defer close(monitored)
		h.monitor(f)
	}()
	h.mu.Unlock()
	h.stopIfIdle()
	return nil
}

// monitor waits for the end of f; if nobody stopped it, every watch
// channel is closed (their owners watch again, starting a new feed).
func (h *hub) monitor(f *feed) {
	<-f.done
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.feed != f {
		return
	}
	h.feed = nil
	for _, ws := range h.watches {
		for w := range ws {
			w.stop()
			close(w.ch)
		}
	}
	h.watches, h.holders = nil, nil
}

// end removes w and closes its channel; calling it again does nothing.
func (h *hub) end(w *watch) {
	w.stop()
	h.mu.Lock()
	ws := h.watches[w.key]
	if _, ok := ws[w]; !ok {
		h.mu.Unlock()
		return
	}
	delete(ws, w)
	close(w.ch)
	if len(ws) == 0 {
		delete(h.watches, w.key)
		delete(h.holders, w.key)
	}
	h.mu.Unlock()
	h.stopIfIdle()
}

// stopIfIdle stops the feed if no watch and no session uses it.
func (h *hub) stopIfIdle() {
	h.mu.Lock()
	f := h.feed
	if f == nil || len(h.watches) > 0 || len(h.sessions) > 0 {
		h.mu.Unlock()
		return
	}
	h.feed = nil
	monitored := h.monitored
	h.mu.Unlock()
	f.stop()
	<-monitored // the feed's monitor sees it was stopped, and ends
}

// learn records the holder's session of a watched lock key from its
// record.
func (h *hub) learn(key string, live bool, value []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.watches[key]; !ok {
		return
	}
	rec, _, ok := decodeLock(entry{value: value, live: live})
	if live && ok && rec.Session != "" {
		h.holders[key] = sessionPrefix + rec.Session
	} else {
		delete(h.holders, key)
	}
}

// deliver handles one change of the feed, on the feed's goroutine.
func (h *hub) deliver(c change) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.first == 0 {
		h.first = c.rev
	}
	h.seen = c.rev
	if h.progress != nil {
		close(h.progress)
		h.progress = nil
	}
	switch {
	case strings.HasPrefix(c.key, lockPrefix):
		h.lockRevs[c.key] = c.rev
		if ws, ok := h.watches[c.key]; ok {
			signal(ws, !c.live)
			rec, _, ok := decodeLock(entry{value: c.value, live: c.live})
			if c.live && ok && rec.Session != "" {
				h.holders[c.key] = sessionPrefix + rec.Session
			} else {
				delete(h.holders, c.key)
			}
		}
		for s := range h.sessions {
			s.changed(c.key, events.Token(c.rev))
		}
	case strings.HasPrefix(c.key, sessionPrefix) && !c.live:
		for key, holder := range h.holders {
			if holder == c.key {
				signal(h.watches[key], true)
			}
		}
		for s := range h.sessions {
			if s.key == c.key {
				s.ended()
			}
		}
	}
}

// signal wakes the watches of a lock; those of releases only if freed.
func signal(ws map[*watch]struct{}, freed bool) {
	for w := range ws {
		if w.releases && !freed {
			continue
		}
		select {
		case w.ch <- struct{}{}:
		default:
		}
	}
}

// lastRev returns the last revision of the lock key the running feed
// delivered; 0 if none.
func (h *hub) lastRev(key string) uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lockRevs[key]
}

// coverage returns the running feed's number and the first revision it
// delivered (every write from it on was delivered, in order); running is
// false if no feed runs.
func (h *hub) coverage() (gen, first uint64, running bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.gen, h.first, h.feed != nil
}

// delivered waits until the feed gen has delivered the write at rev (and
// so every write before it), at most wait; false if it did not, or if
// that feed ended.
func (h *hub) delivered(ctx context.Context, gen, rev uint64, wait time.Duration) bool {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		h.mu.Lock()
		if h.feed == nil || h.gen != gen {
			h.mu.Unlock()
			return false
		}
		if h.seen >= rev {
			h.mu.Unlock()
			return true
		}
		if h.progress == nil {
			h.progress = make(chan struct{})
		}
		ch := h.progress
		h.mu.Unlock()
		select {
		case <-ch:
		case <-timer.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// join makes the feed report s's losses; the session starts the feed
// itself (start) before the calls that need it.
func (h *hub) join(s *session) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sessions == nil {
		h.sessions = map[*session]struct{}{}
	}
	h.sessions[s] = struct{}{}
}

// leave stops reporting s's losses.
func (h *hub) leave(s *session) {
	h.mu.Lock()
	delete(h.sessions, s)
	h.mu.Unlock()
	h.stopIfIdle()
}
