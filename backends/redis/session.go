package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/ledger"
	"github.com/hustings/hustings/internal/validate"
)

// session is one Open: a session key that its KeepAlive renews. It knows
// the names it may hold and the groups it may be registered in, so that
// Close can free the names, wake their waiters and delete its entries.
type session struct {
	b   *Backend
	id  string        // candidate ID
	sid string        // session ID: 32 random hex digits, ':', id
	key string        // session key
	ttl time.Duration // rounded up to a millisecond

	mu      sync.Mutex
	closed  bool
	names   map[string]struct{} // locks it may hold
	groups  map[string]struct{} // groups it may have an entry in
	pending bool                // the session key is not known to be set yet
	opened  time.Time           // start of Open
	loss    *lossWatch          // started by the first Losses; nil before

	ledger ledger.Ledger // what Acquire granted, and what KeepAlive found gone
}

func newSession(b *Backend, id string, ttl time.Duration) *session {
	var r [sidRandLen / 2]byte
	_, _ = rand.Read(r[:]) // never fails
	sid := hex.EncodeToString(r[:]) + ":" + id
	return &session{
		b:      b,
		id:     id,
		sid:    sid,
		key:    b.sessionKey(sid),
		ttl:    time.Duration(ms(ttl)) * time.Millisecond,
		names:  make(map[string]struct{}),
		groups: make(map[string]struct{}),
	}
}

// ID returns the candidate ID the session was opened for.
func (s *session) ID() string { return s.id }

// opening reports whether the session key still has to be set, in the
// pipeline of the call about to be made (a SET NX of it first). Within
// the TTL of Open that is safe however often a call failed before:
// a key set since cannot have expired yet, so the SET NX finds it or sets
// it for the first time, and a session key is never set again once gone.
// Past that, a session whose key was never confirmed is lost.
func (s *session) opening() (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case !s.pending:
		return false, nil
	case time.Since(s.opened) >= s.ttl:
		return false, s.lost()
	}
	return true, nil
}

// set records that a pipeline with the session key's SET NX succeeded.
func (s *session) set() {
	s.mu.Lock()
	s.pending = false
	s.mu.Unlock()
}

// Acquire takes name if it is free, held by this session (same token), or
// held by a session that is gone (compare-and-set on that exact holder).
// One round trip on a single server; through a Cluster one when it is
// free or ours, two or three when it is not.
// The ledger records what it grants, for KeepAlive to confirm.
func (s *session) Acquire(ctx context.Context, name string, lease time.Duration) (events.Token, error) {
	if err := s.usable(); err != nil {
		return 0, err
	}
	if err := validate.Acquire(name, lease); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, unavailable(ctx, "acquire", err)
	}
	tok, err := s.acquire(ctx, name, lease)
	if err == nil {
		s.ledger.Granted(name, tok)
	}
	return tok, err
}

// acquire runs the acquire script, and through a Cluster the take-over
// if the holder's session is gone (on a single server the script takes
// it over itself).
func (s *session) acquire(ctx context.Context, name string, lease time.Duration) (events.Token, error) {
	k := s.b.keys(name)
	s.track(name)
	tok, holder, err := s.try(ctx, k, lease, "")
	if err != nil || holder == "" {
		return tok, err
	}
	v, err := parseValue(holder)
	if err != nil {
		return 0, unavailable(ctx, "acquire", err)
	}
	if !v.held && !s.b.oneServer { // on one server the script checked it
		alive, err := s.b.client.Exists(ctx, s.b.sessionKey(v.sid)).Result()
		if err != nil {
			return 0, unavailable(ctx, "acquire", err)
		}
		if alive == 0 {
			if tok, holder, err = s.try(ctx, k, lease, holder); err != nil || holder == "" {
				return tok, err
			}
			if v, err = parseValue(holder); err != nil {
				return 0, unavailable(ctx, "acquire", err)
			}
		}
	}
	s.untrack(name)
	return 0, fmt.Errorf("%w: %q by %s", backends.ErrHeld, name, v.id())
}

// try runs the acquire script once, taking the lock over from the holder
// value expect if it is not "". It returns the token if this session holds
// the lock now, or else the holder's value.
func (s *session) try(ctx context.Context, k lockKeys, lease time.Duration, expect string) (events.Token, string, error) {
	call := scriptCall{acquireScript, []string{k.lock, k.fence, k.wanted}, []any{s.sid, ms(lease), k.channel, expect, s.b.sessionPrefix(), wantedMs}}
	reply, alive, err := s.runChecked(ctx, call)
	if err != nil {
		return 0, "", unavailable(ctx, "acquire", err)
	}
	status, val, err := acquireReply(reply)
	switch {
	case err != nil:
		return 0, "", unavailable(ctx, "acquire", err)
	case status == "lost":
		return 0, "", s.lost()
	case status == "held":
		if !alive {
			return 0, "", s.lost()
		}
		return 0, val, nil
	}
	tok, err := strconv.ParseUint(val, 10, 64)
	if err != nil {
		return 0, "", unavailable(ctx, "acquire", fmt.Errorf("token %q: %w", val, err))
	}
	if !alive {
		// The lock is now held by a session that is gone, which is free;
		// deleting it wakes the waiters at once.
		s.b.undo(ctx, k, s.value(events.Token(tok)))
		return 0, "", s.lost()
	}
	return events.Token(tok), "", nil
}

// acquireReply splits the acquire script's reply {status, value}.
func acquireReply(reply any) (status, val string, err error) {
	r, ok := reply.([]any)
	if ok && len(r) == 2 {
		status, ok1 := r[0].(string)
		val, ok2 := r[1].(string)
		if ok1 && ok2 {
			return status, val, nil
		}
	}
	return "", "", fmt.Errorf("unexpected acquire reply %#v", reply)
}

// Release frees name, or marks it held by nobody alive for hold, if this
// session holds it under token. One round trip. Whatever its outcome, the
// session claims name under token no more: KeepAlive stops confirming it,
// and Lost stops reporting it.
func (s *session) Release(ctx context.Context, name string, token events.Token, hold time.Duration) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := validate.Release(name, hold); err != nil {
		return err
	}
	s.ledger.Released(name, token)
	if err := ctx.Err(); err != nil {
		return unavailable(ctx, "release", err)
	}
	k := s.b.keys(name)
	tok := strconv.FormatUint(uint64(token), 10)
	call := scriptCall{releaseScript, []string{k.lock, k.wanted}, []any{s.sid, tok, ms(hold), k.channel, k.wake}}
	reply, alive, err := s.runChecked(ctx, call)
	if err != nil {
		return unavailable(ctx, "release", err)
	}
	released := reply == int64(1)
	if reply == int64(-1) {
		return fmt.Errorf("%w: %q: %w", backends.ErrNotHeld, name, s.lost())
	}
	if !alive {
		if released && hold > 0 {
			// A session that is gone holds nothing, so it may not leave
			// a hold behind either.
			s.b.undo(ctx, k, tok+" h "+s.sid)
		}
		return fmt.Errorf("%w: %q: %w", backends.ErrNotHeld, name, s.lost())
	}
	if !released {
		return fmt.Errorf("%w: %q under token %d by this session of %s", backends.ErrNotHeld, name, token, s.id)
	}
	s.untrack(name)
	return nil
}

// Close deletes the session key, which frees every lock of the session and
// drops its registry entries, releases the locks it may hold so that their
// waiters wake, and deletes its entries: one pipeline. If it does not
// reach Redis, the session is closed all the same, and its locks are freed
// and its entries dropped when the session key expires.
func (s *session) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	names := make([]string, 0, len(s.names))
	for name := range s.names {
		names = append(names, name)
	}
	groups := slices.Collect(maps.Keys(s.groups))
	s.mu.Unlock()
	s.stopLosses()
	if err := ctx.Err(); err != nil {
		return unavailable(ctx, "close", err)
	}
	noScript, err := s.closePipeline(ctx, names, groups, false)
	if noScript {
		_, err = s.closePipeline(ctx, names, groups, true)
	}
	if err != nil {
		return unavailable(ctx, "close", err)
	}
	return nil
}

// closePipeline deletes the session key and the session's entries in
// groups, and releases names, with scripts by hash or, if eval, by source.
// noScript reports that the server did not have the script cached.
func (s *session) closePipeline(ctx context.Context, names, groups []string, eval bool) (noScript bool, err error) {
	cmds := make([]*goredis.Cmd, 0, len(names))
	_, err = s.b.client.Pipelined(ctx, func(p goredis.Pipeliner) error {
		p.Del(ctx, s.key)
		for _, group := range groups {
			p.HDel(ctx, s.b.groupKeys(group).members, s.sid)
		}
		for _, name := range names {
			k := s.b.keys(name)
			keys, args := []string{k.lock, k.wanted}, []any{s.sid, "", 0, k.channel, k.wake}
			if eval {
				cmds = append(cmds, releaseScript.Eval(ctx, p, keys, args...))
			} else {
				cmds = append(cmds, releaseScript.EvalSha(ctx, p, keys, args...))
			}
		}
		return nil
	})
	for _, c := range cmds {
		if goredis.HasErrorPrefix(c.Err(), "NOSCRIPT") {
			return true, err
		}
	}
	return false, err
}

// check makes the local checks of a call on name, then looks at ctx.
func (s *session) check(ctx context.Context, op, name string) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := validate.Name(name); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return unavailable(ctx, op, err)
	}
	return nil
}

// usable returns an error matching backends.ErrSessionClosed once Close
// was called.
func (s *session) usable() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("redis: session of %s: %w", s.id, backends.ErrSessionClosed)
	}
	return nil
}

func (s *session) lost() error {
	return fmt.Errorf("redis: session of %s: %w", s.id, backends.ErrSessionLost)
}

func (s *session) track(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.names[name] = struct{}{}
}

func (s *session) untrack(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.names, name)
}

// undo deletes the lock if its value is still val, best effort: if it
// fails, the lock is free all the same, because its session is gone, and
// only its waiters are not woken.
func (b *Backend) undo(ctx context.Context, k lockKeys, val string) {
	_ = undoScript.Run(ctx, b.client, []string{k.lock}, val, k.channel, k.wake).Err()
}

// Lost returns the locks KeepAlive found gone; see backends.Session.
func (s *session) Lost() map[string]events.Token { return s.ledger.Lost() }
