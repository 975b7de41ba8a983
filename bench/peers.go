package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	redsyncgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredis "github.com/redis/go-redis/v9"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/redis/redistest"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
)

// Settings of the peer libraries, stated in the report.
const (
	peerTTL        = 10 * time.Second      // lock TTL / session TTL of every peer
	redislockRetry = 10 * time.Millisecond // redislock's LinearBackoff when a caller waits
	redsyncNote    = "default retry: up to 32 tries, 50–250 ms apart; expiry 10 s"
	hustingsLease  = 4 * time.Second        // RunIfLeader's lease (≤ the ZooKeeper session timeout)
	hustingsRetry  = 100 * time.Millisecond // RunIfLeader's poll interval while waiting (watch wakes it first)
)

// locker is one candidate of a lock library: run holds the lock name while
// cs runs, waiting for it, the library's way, while another holds it.
// Safe for concurrent use on distinct names.
type locker interface {
	run(ctx context.Context, name string, cs func()) error
	close()
}

// peer is a lock library measured beside Hustings on one backend.
type peer struct {
	name string
	note string // its settings, for the report
	// open returns a new candidate: a client (and session) of its own.
	open func(ctx context.Context) (locker, error)
	// gap is the longest a waiting candidate of a library that polls on a
	// slow timer sleeps between its tries (0: woken by the server, or
	// polls within milliseconds): the handover workload releases the lock
	// at a random moment within it.
	gap time.Duration
}

// The Hustings subjects of the throughput and contended workloads: runs
// that open a session each, and runs on a session the candidate keeps.
const (
	subjectRunIf        = "hustings RunIfLeader"
	subjectRunIfSession = "hustings RunIfLeader on a session"
)

// hustingsLocker is campaign.RunIfLeader. With wait > 0 it waits up to
// wait for a held lock (woken by the backend's watch, polling every
// hustingsRetry); else it skips a held lock, which the caller reports as
// an error. With session, every run is on it (WithSession).
type hustingsLocker struct {
	b       backends.Backend
	wait    time.Duration
	session *sessionRun // nil: each run opens a session of its own
	closer  func()      // nil: the backend is not the locker's own
}

func (h hustingsLocker) run(ctx context.Context, name string, cs func()) error {
	opts := []campaign.Option{campaign.WithTTL(hustingsLease), campaign.WithRetry(hustingsRetry)}
	if h.wait > 0 {
		opts = append(opts, campaign.WithWait(h.wait))
	}
	if h.session != nil {
		opts = append(opts, campaign.WithSession(h.session.sess))
	}
	res, err := campaign.RunIfLeader(ctx, h.b, name, func(context.Context, events.Token) (struct{}, error) {
		cs()
		return struct{}{}, nil
	}, opts...)
	if err != nil {
		return h.session.explain(err)
	}
	if res.Outcome != campaign.Succeeded || res.Token == 0 {
		return fmt.Errorf("RunIfLeader: %v (token %d): %v", res.Outcome, res.Token, res.Err)
	}
	return nil
}

// close closes the locker's session first (its Run then frees its locks
// and returns), then the client under it.
func (h hustingsLocker) close() {
	if h.session != nil {
		_ = h.session.sess.Close()
		<-h.session.done
	}
	if h.closer != nil {
		h.closer()
	}
}

// sessionRun is a campaign.Session kept alive by a goroutine of its
// locker.
type sessionRun struct {
	sess *campaign.Session
	done chan struct{} // closed once Run has returned, with err set
	err  error
}

// startSession opens a session on b with an ID of its own and runs it
// until the locker closes it (or ctx ends).
func startSession(ctx context.Context, b backends.Backend) (*sessionRun, error) {
	// The TTL is RunIfLeader's lease: within ZooKeeper's session timeout.
	sess, err := campaign.NewSession(b, campaign.WithID(fmt.Sprintf("bench-session-%d", seq.Add(1))), campaign.WithTTL(hustingsLease))
	if err != nil {
		return nil, err
	}
	r := &sessionRun{sess: sess, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.err = sess.Run(ctx)
	}()
	return r, nil
}

// explain adds why the session stopped, if it has, to a run's error: a
// session that could not open shows up first as a run that fails.
func (r *sessionRun) explain(err error) error {
	if r == nil {
		return err
	}
	select {
	case <-r.done:
		return fmt.Errorf("%w (the session's Run returned: %v)", err, r.err)
	default:
		return err
	}
}

// contendedWait is how long a contended RunIfLeader waits for the lock.
const contendedWait = time.Minute

// hustingsSubjects are the RunIfLeader subjects of s, without a session
// and on one; with wait they wait for a held lock.
func hustingsSubjects(s *system, wait bool) []peer {
	return []peer{hustingsPeer(s, wait), hustingsSessionPeer(s, wait)}
}

// hustingsPeer makes RunIfLeader candidates of s, each on a backend of its
// own; with wait they wait for a held lock (WithWait(contendedWait)),
// else they expect it free.
func hustingsPeer(s *system, wait bool) peer {
	w := waitFor(wait)
	return peer{name: subjectRunIf, note: hustingsNote(wait), open: func(context.Context) (locker, error) {
		b, closer, err := s.fresh()
		if err != nil {
			return nil, err
		}
		return hustingsLocker{b: b, wait: w, closer: closer}, nil
	}}
}

// hustingsSessionPeer is hustingsPeer with a session per candidate, opened
// with the candidate and kept until it closes, as a process that runs
// RunIfLeader often would keep one: each run is an acquire and a release.
func hustingsSessionPeer(s *system, wait bool) peer {
	w := waitFor(wait)
	note := hustingsNote(wait) + fmt.Sprintf("; on a session of its own (NewSession, TTL %v, Run in a goroutine)", hustingsLease)
	return peer{name: subjectRunIfSession, note: note, open: func(ctx context.Context) (locker, error) {
		b, closer, err := s.fresh()
		if err != nil {
			return nil, err
		}
		sr, err := startSession(ctx, b)
		if err != nil {
			closer()
			return nil, err
		}
		return hustingsLocker{b: b, wait: w, session: sr, closer: closer}, nil
	}}
}

// waitFor is how long a Hustings candidate waits for a held lock.
func waitFor(wait bool) time.Duration {
	if wait {
		return contendedWait
	}
	return 0
}

// hustingsNote states a Hustings candidate's settings, for the report.
func hustingsNote(wait bool) string {
	if wait {
		return fmt.Sprintf("lease %v, WithWait(%v), retry %v (woken by the backend's watch first)", hustingsLease, contendedWait, hustingsRetry)
	}
	return fmt.Sprintf("lease %v, skips a held lock", hustingsLease)
}

func redisPeers(addr string) []peer {
	return []peer{
		{
			name: "redislock",
			note: fmt.Sprintf("Obtain with LinearBackoff(%v) while waiting, TTL %v", redislockRetry, peerTTL),
			open: func(context.Context) (locker, error) {
				c := goredis.NewClient(redistest.Options(addr))
				return redislockLocker{c: c, rl: redislock.New(c)}, nil
			},
		},
		{
			name: "redsync",
			note: redsyncNote,
			open: func(context.Context) (locker, error) {
				c := goredis.NewClient(redistest.Options(addr))
				return redsyncLocker{c: c, rs: redsync.New(redsyncgoredis.NewPool(c))}, nil
			},
		},
	}
}

type redislockLocker struct {
	c  *goredis.Client
	rl *redislock.Client
}

func (r redislockLocker) run(ctx context.Context, name string, cs func()) error {
	opts := &redislock.Options{RetryStrategy: redislock.LinearBackoff(redislockRetry)}
	for {
		// Obtain gives up after the TTL when ctx has no deadline: a
		// waiting candidate loops.
		l, err := r.rl.Obtain(ctx, "peer:redislock:"+name, peerTTL, opts)
		if errors.Is(err, redislock.ErrNotObtained) || (err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded)) {
			continue
		}
		if err != nil {
			return err
		}
		cs()
		return l.Release(ctx)
	}
}

func (r redislockLocker) close() { _ = r.c.Close() }

type redsyncLocker struct {
	c  *goredis.Client
	rs *redsync.Redsync
}

func (r redsyncLocker) run(ctx context.Context, name string, cs func()) error {
	m := r.rs.NewMutex("peer:redsync:"+name, redsync.WithExpiry(peerTTL))
	for {
		err := m.LockContext(ctx)
		var taken *redsync.ErrTaken
		if errors.Is(err, redsync.ErrFailed) || errors.As(err, &taken) {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			continue // gave up after its tries: a waiting candidate loops
		}
		if err != nil {
			return err
		}
		cs()
		_, err = m.UnlockContext(ctx)
		return err
	}
}

func (r redsyncLocker) close() { _ = r.c.Close() }
