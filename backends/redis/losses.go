package redis

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/hustings/hustings/backends/internal/hub"
	"github.com/hustings/hustings/events"
)

// lossRetry is how long the loss watch waits before it subscribes again
// after a subscription failed; KeepAlive confirms the locks meanwhile.
const lossRetry = time.Second

// lossSubscribers is how many subscriptions the loss watch waits for at
// once: a session that holds many locks subscribes to their channels
// within a few round trips, not one round trip a lock.
const lossSubscribers = 64

// Losses returns the channel of backends.Session.Losses. Its first call
// starts the session's loss watch: at every successful KeepAlive it
// subscribes, on the Backend's one pub/sub connection, to the channel of
// every lock the session held across that renewal, and drops the
// subscriptions of the locks it no longer holds. A take of such a lock by
// any other session (the acquire script publishes the taker's token)
// then moves it to Lost at once, within a message's delivery, not at the
// next KeepAlive: a lock deleted behind its holder's back (a DEL, an
// eviction) and taken by another candidate is told to its old holder
// within milliseconds. A bare delete that nobody follows with a take
// publishes nothing: KeepAlive finds it, and no other candidate leads
// meanwhile. A lock is followed from the first renewal after its Acquire
// (a short run, released before it, costs no subscription); a take before
// that is found by KeepAlive too. A goroutine of the session makes the
// subscriptions, in the background, until Close.
func (s *session) Losses() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.loss == nil && !s.closed {
		ctx, cancel := context.WithCancel(context.Background())
		lw := &lossWatch{kick: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{})}
		s.loss = lw
		go s.followLosses(ctx, lw)
	}
	return s.ledger.Losses()
}

// lossWatch is a session's loss watch (see Losses).
type lossWatch struct {
	kick   chan struct{} // signalled (buffer 1) after each successful KeepAlive
	cancel context.CancelFunc
	done   chan struct{} // closed when followLosses has returned
}

// kickLosses tells the loss watch, if there is one, that a renewal
// confirmed the session's locks. It does not block.
func (s *session) kickLosses() {
	s.mu.Lock()
	lw := s.loss
	s.mu.Unlock()
	if lw != nil {
		select {
		case lw.kick <- struct{}{}:
		default:
		}
	}
}

// stopLosses ends the loss watch, if any, and waits for it; s.closed is
// set, so no new one starts.
func (s *session) stopLosses() {
	s.mu.Lock()
	lw := s.loss
	s.mu.Unlock()
	if lw != nil {
		lw.cancel()
		<-lw.done
	}
}

// followLosses keeps one subscription per lock the session holds until ctx
// ends: at every kick it drops those of locks released or found lost, and
// subscribes to the new ones. A subscription that broke (the connection
// failed: its Sub's channel is closed) is made again at a later kick; one
// that failed, after lossRetry.
func (s *session) followLosses(ctx context.Context, lw *lossWatch) {
	defer close(lw.done)
	subs := map[string]*hub.Sub[struct{}]{}
	var retryAt time.Time
	defer func() {
		for name, sub := range subs {
			s.b.losers.remove(s.b.keys(name).channel, s)
			sub.End()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-lw.kick:
		}
		held := s.ledger.Held()
		for name, sub := range subs {
			if _, ok := held[name]; ok && !ended(sub) {
				continue
			}
			s.b.losers.remove(s.b.keys(name).channel, s)
			sub.End()
			delete(subs, name)
		}
		if time.Now().Before(retryAt) {
			continue
		}
		var fresh []string
		for name := range held {
			if subs[name] == nil {
				fresh = append(fresh, name)
			}
		}
		made, failed := s.subscribe(ctx, fresh)
		for name, sub := range made {
			subs[name] = sub
		}
		if failed {
			retryAt = time.Now().Add(lossRetry)
		}
		s.lookAgain(ctx, fresh)
	}
}

// subscribe subscribes to the channels of names, lossSubscribers at a
// time, registering the session as a loser of each first, and returns
// the subscriptions made, and whether any failed.
func (s *session) subscribe(ctx context.Context, names []string) (made map[string]*hub.Sub[struct{}], failed bool) {
	made = make(map[string]*hub.Sub[struct{}], len(names))
	var mu sync.Mutex
	var wg sync.WaitGroup
	turns := make(chan struct{}, lossSubscribers)
	for _, name := range names {
		turns <- struct{}{}
		wg.Go(func() {
			defer func() { <-turns }()
			channel := s.b.keys(name).channel
			s.b.losers.add(channel, name, s)
			sub, err := s.b.hub.Watch(ctx, channel)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				s.b.losers.remove(channel, s)
				failed = true
				return
			}
			made[name] = sub
		})
	}
	wg.Wait()
	return made, failed
}

// lookAgain reads the locks whose subscription is new, in one pipeline,
// and hands each value to the ledger as a take would: a take-over between
// the renewal that confirmed the lock and its subscription published
// nothing the session heard. A read that fails changes nothing; KeepAlive
// confirms the locks.
func (s *session) lookAgain(ctx context.Context, names []string) {
	if len(names) == 0 {
		return
	}
	gets := make([]*goredis.StringCmd, len(names))
	_, _ = s.b.client.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, name := range names {
			gets[i] = p.Get(ctx, s.b.keys(name).lock)
		}
		return nil
	})
	for i, name := range names {
		if v, err := gets[i].Result(); err == nil {
			if tok, ok := valueToken(v); ok {
				s.ledger.GoneAt(name, tok)
			}
		}
	}
}

// valueToken returns the token of a lock value ("<token> s|h <session
// ID>"), as the acquire script also publishes it.
func valueToken(v string) (events.Token, bool) {
	tok, _, ok := strings.Cut(v, " ")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(tok, 10, 64)
	return events.Token(n), err == nil
}

// ended reports whether sub's channel was closed (the subscription broke);
// a signal it takes instead means nothing to the loss watch.
func ended(sub *hub.Sub[struct{}]) bool {
	select {
	case _, ok := <-sub.C():
		return !ok
	default:
		return false
	}
}

// losers are the sessions whose loss watch follows a lock's channel, by
// channel: the pub/sub reader hands them each take it hears of (took).
// A channel has one follower but for a moment after a take-over between
// two sessions of the Backend.
type losers struct {
	mu sync.Mutex
	by map[string][]loser
}

// loser is a session that follows the channel of its lock name.
type loser struct {
	s    *session
	name string
}

func (l *losers) add(channel, name string, s *session) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.by == nil {
		l.by = map[string][]loser{}
	}
	l.by[channel] = append(l.by[channel], loser{s, name})
}

func (l *losers) remove(channel string, s *session) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ls := l.by[channel]
	for i := range ls {
		if ls[i].s == s {
			ls = append(ls[:i], ls[i+1:]...)
			break
		}
	}
	if len(ls) == 0 {
		delete(l.by, channel)
	} else {
		l.by[channel] = ls
	}
}

// took hands a message of channel to the sessions that follow it: the
// acquire script publishes the taker's lock value ("<token> s <session
// ID>"), and a session granted the lock under a lower token has lost it
// (tokens only grow, so its own take's message, under its own token,
// changes nothing). Other messages (releases) are ignored. It does not
// block: the reader of the Backend's pub/sub connection calls it.
func (l *losers) took(channel, payload string) {
	tok, ok := valueToken(payload)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, f := range l.by[channel] {
		f.s.ledger.GoneAt(f.name, tok)
	}
}
