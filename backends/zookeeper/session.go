package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/ledger"
	"github.com/hustings/hustings/internal/validate"
)

// session is one logical session on the Backend's conn: an ephemeral node
// root/sessions/<sid> whose mtime each KeepAlive renews. Fields after mu
// are guarded by mu.
type session struct {
	b         *Backend
	id        string
	ttl       time.Duration
	sid       string
	path      string // the session node
	data      []byte // the session node's data
	lockData  []byte // the data of its lock nodes without a lease, encoded once
	zkSession int64  // the ZooKeeper session the node belongs to

	mu       sync.Mutex
	busy     map[string]chan struct{} // lock names with an Acquire or Release in progress (see enter)
	pending  bool                     // the session node is not known to exist yet (see multi)
	expires  time.Time                // start of the last successful Open or KeepAlive + ttl, local clock
	closed   bool
	lost     error             // set once the session is known to be lost
	locks    map[string]*lock  // the session's nodes, queued or holding: what it holds
	nGranted int               // how many of locks an Acquire granted
	entries  map[string]string // group → the path of the session's registry entry
	watch    *lossWatch        // nil until Losses

	// ledger reports Lost: it is fed from locks as Acquire grants them,
	// Release and Dequeue give them up, and KeepAlive or Acquire finds
	// them gone.
	ledger ledger.Ledger
}

// lock is the session's node for one lock name: queued, or holding.
type lock struct {
	name    string // the lock name
	child   string // the node's name
	path    string
	token   events.Token // the node's czxid
	lease   time.Duration
	start   time.Time // start of the Acquire that made the node, local clock
	judged  time.Time // the last look that judged the nodes ahead (see walk); start at first
	granted bool      // an Acquire returned it as the holder; set under the session's mu
}

// parent returns the path of the lock's parent node, which l's node is
// a child of: b.lockPath(l.name), without building it again.
func (l *lock) parent() string { return l.path[:strings.LastIndexByte(l.path, '/')] }

// leaseOver reports whether the lock's lease has ended at now.
func (l *lock) leaseOver(now time.Time) bool {
	return l.lease > 0 && !now.Before(l.start.Add(l.lease))
}

// Open starts a logical session for candidate id: an ephemeral node on the
// conn's ZooKeeper session, renewed by KeepAlive. Open makes no request:
// the session's first call creates the node in the transaction of what it
// writes (see multi), so a run that opens a session, takes a lock and
// closes it makes two requests. ttl must not exceed the session timeout
// (see WithSessionTimeout): else the server could drop the locks of a
// partitioned candidate before its TTL ends. Errors match
// backends.ErrInvalid for bad input, backends.ErrUnavailable when ctx is
// done or the conn has no ZooKeeper session.
func (b *Backend) Open(ctx context.Context, id string, ttl time.Duration) (backends.Session, error) {
	if err := validate.Session(id, ttl); err != nil {
		return nil, err
	}
	if ttl > b.sessionTimeout {
		return nil, fmt.Errorf("%w: zookeeper: TTL %v exceeds the ZooKeeper session timeout %v, the maximum", backends.ErrInvalid, ttl, b.sessionTimeout)
	}
	if err := b.ready(ctx, "open session", ""); err != nil {
		return nil, err
	}
	// The local deadline counts from now, before the node's creation
	// stamps its mtime: it ends no later than others' view of the session.
	start := time.Now()
	sid := newSID()
	return &session{
		b:         b,
		id:        id,
		ttl:       ttl,
		sid:       sid,
		path:      b.sessionsPath() + "/" + sid,
		data:      encode(sessionData{ID: id, TTL: millis(ttl)}),
		lockData:  encode(lockData{ID: id}),
		zkSession: b.conn.SessionID(),
		busy:      make(map[string]chan struct{}),
		pending:   true,
		expires:   start.Add(ttl),
		locks:     make(map[string]*lock),
		entries:   make(map[string]string),
	}, nil
}

// ID returns the candidate ID the session was opened for.
func (s *session) ID() string { return s.id }

// Close deletes the session node, every lock node of the session and its
// registry entries in one transaction, which wakes their watchers. Hold
// markers stay. If the server cannot be reached the session is closed all
// the same and its nodes are left to expire: others delete them once the
// TTL has passed.
func (s *session) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	lost := s.lost
	nodes := s.takeNodes()
	s.mu.Unlock()
	s.stopWatch()
	err := s.b.remove(ctx, nodes)
	if lost != nil {
		return nil
	}
	return err
}

// usable returns an error matching backends.ErrSessionClosed once Close
// was called.
func (s *session) usable() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closedErr()
}

func (s *session) closedErr() error {
	if s.closed {
		return fmt.Errorf("zookeeper: session of %s: %w", s.id, backends.ErrSessionClosed)
	}
	return nil
}

// alive returns the error for a call of s starting at now: closed, or
// lost. A session found lost now has its nodes deleted, as far as ctx
// allows.
func (s *session) alive(ctx context.Context, now time.Time) error {
	s.mu.Lock()
	if err := s.closedErr(); err != nil {
		s.mu.Unlock()
		return err
	}
	lost := s.lost
	s.mu.Unlock()
	switch {
	case lost != nil:
		return lost
	case !now.Before(s.expiry()):
		return s.markLost(ctx, fmt.Errorf("its TTL %v ran out", s.ttl))
	case s.b.conn.SessionID() != s.zkSession:
		return s.markLost(ctx, fmt.Errorf("ZooKeeper session %#x ended", s.zkSession))
	}
	return nil
}

func (s *session) expiry() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.expires
}

// markLost records that s is lost because of why, deletes what is left of
// its nodes (best effort) and returns the error matching
// backends.ErrSessionLost that every later call returns.
func (s *session) markLost(ctx context.Context, why error) error {
	s.mu.Lock()
	if s.lost != nil {
		err := s.lost
		s.mu.Unlock()
		return err
	}
	s.lost = fmt.Errorf("zookeeper: session of %s: %w: %w", s.id, backends.ErrSessionLost, why)
	err := s.lost
	nodes := s.takeNodes()
	s.mu.Unlock()
	_ = s.b.remove(ctx, nodes)
	return err
}

// fail translates err of a call of s; an expired ZooKeeper session marks
// s lost.
func (s *session) fail(ctx context.Context, what string, err error) error {
	err = fail(ctx, what, err)
	if errors.Is(err, backends.ErrSessionLost) {
		s.mu.Lock()
		if s.lost == nil {
			s.lost = err
		}
		s.mu.Unlock()
	}
	return err
}

// takeNodes empties the session's locks and registry entries and returns
// the paths of all its nodes, the session node first (unless it was never
// created: then it has no others either). s.mu must be held.
func (s *session) takeNodes() []string {
	nodes := make([]string, 0, 1+len(s.locks)+len(s.entries))
	if !s.pending {
		nodes = append(nodes, s.path)
	}
	for _, l := range s.locks {
		nodes = append(nodes, l.path)
		s.b.untrack(l.name, l.child)
	}
	for _, p := range s.entries {
		nodes = append(nodes, p)
	}
	s.locks = make(map[string]*lock)
	s.nGranted = 0
	s.entries = make(map[string]string)
	return nodes
}

// lockOf returns the session's node for name, or nil.
func (s *session) lockOf(name string) *lock {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.locks[name]
}

// record makes l the session's node for its name. It returns false, and
// records nothing, once the session is closed or lost.
func (s *session) record(l *lock) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.lost != nil {
		return false
	}
	s.locks[l.name] = l
	s.b.track(l.name, l.child)
	return true
}

// forget drops l from the session's nodes.
func (s *session) forget(l *lock) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unrecord(l)
}

// unrecord drops l from the session's nodes. s.mu must be held.
func (s *session) unrecord(l *lock) {
	if s.locks[l.name] == l {
		delete(s.locks, l.name)
		if l.granted {
			s.nGranted--
		}
	}
	s.b.untrack(l.name, l.child)
	if s.nGranted == 0 {
		s.settled() // nothing left for the loss watch to watch
	}
}

// grant marks l as held: an Acquire returns its token. If l was found
// gone meanwhile (a KeepAlive or Close took it from the session's nodes),
// it is reported lost at once.
func (s *session) grant(l *lock) events.Token {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !l.granted && s.locks[l.name] == l {
		s.nGranted++
	}
	l.granted = true
	s.ledger.Granted(l.name, l.token)
	s.tellGranted()
	if s.locks[l.name] != l {
		s.ledger.Gone(l.name, l.token)
	}
	return l.token
}

// lose drops l, whose node was found gone (or whose lease ended) while
// the session lives: if it was granted, Lost reports it.
func (s *session) lose(l *lock) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unrecord(l)
	if l.granted {
		s.ledger.Gone(l.name, l.token)
	}
}

// drop forgets l and deletes its node, as far as ctx allows.
func (s *session) drop(ctx context.Context, l *lock) {
	s.forget(l)
	_ = s.b.call(ctx, "delete", l.path, func() error { return s.b.conn.Delete(l.path, -1) })
}

// enter waits until no other Acquire or Release of name by s is in
// progress, so that the session has one node per name at most. Calls for
// different names go on in parallel. A call in progress has an entry in
// s.busy: a channel that leave closes, made by the first call that waits
// for it (nil until then, so that a call nobody waits for makes none).
func (s *session) enter(ctx context.Context, name string) error {
	for {
		s.mu.Lock()
		wait, busy := s.busy[name]
		if !busy {
			s.busy[name] = nil
			s.mu.Unlock()
			return nil
		}
		if wait == nil {
			wait = make(chan struct{})
			s.busy[name] = wait
		}
		s.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return fmt.Errorf("%w: zookeeper: %q busy: %w", backends.ErrUnavailable, name, ctx.Err())
		}
	}
}

// leave ends the call on name that enter let in, and wakes the calls
// waiting for it.
func (s *session) leave(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if wait := s.busy[name]; wait != nil {
		close(wait)
	}
	delete(s.busy, name)
}

// removeBatch bounds the deletes of one transaction, far below the
// server's 1 MB request limit (jute.maxbuffer), past which it would drop
// the connection.
const removeBatch = 500

// remove deletes the nodes of a session (see takeNodes), in transactions
// of up to removeBatch nodes, the session node first: once it is gone,
// others treat the rest as dead. A transaction that fails because a node
// is already gone is done again one node at a time.
func (b *Backend) remove(ctx context.Context, paths []string) error {
	for batch := range slices.Chunk(paths, removeBatch) {
		if err := b.removeAll(ctx, batch); err != nil {
			return err
		}
	}
	return nil
}

// removeAll deletes the nodes at paths in one transaction, or one by one
// if some are already gone.
func (b *Backend) removeAll(ctx context.Context, paths []string) error {
	ops := make([]any, len(paths))
	for i, p := range paths {
		ops[i] = &zk.DeleteRequest{Path: p, Version: -1}
	}
	err := b.call(ctx, "close session", "", func() error {
		_, err := b.conn.Multi(ops...)
		return err
	})
	if !errors.Is(err, zk.ErrNoNode) {
		return fail(ctx, "close session", err)
	}
	for _, p := range paths {
		err := b.call(ctx, "delete", path.Base(p), func() error { return b.conn.Delete(p, -1) })
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return fail(ctx, "close session", err)
		}
	}
	return nil
}
