package redis

import (
	"context"

	goredis "github.com/redis/go-redis/v9"
)

// Through a Cluster the scripts but confirmScript touch only the keys of
// one lock, which share a hash slot, and read no session key, which lives
// in a slot of its own: a pipelined EXISTS checks it. On a single server
// (see Backend.oneServer) the acquire and release scripts read the session
// keys themselves: one command a call, and a take-over from a session
// that is gone needs no round trips of its own. confirmScript reads the
// lock keys of many names, so it runs on a single server only. They are
// run with EVALSHA, and with EVAL when the server does not have them
// cached.

// acquireScript takes the lock if it is free, or if its value is exactly
// ARGV[4] (a holder whose session the caller found gone; session keys are
// never recreated, so that is a stable fact), or, on a single server, if
// its holder's session key ARGV[5] .. <session ID> is gone. One MGET reads
// the lock, its fencing counter and, on a single server, the caller's
// session key. The token is the server's clock in microseconds, or the
// counter + 1 if that is higher (a name taken more than once in a
// microsecond, or a clock that went back); one MSET writes it to the
// counter and the lock. So tokens strictly increase while the server
// keeps its data and, clock permitting (see the package doc), if it loses
// it. Finding the lock held, it marks it wanted (a key that lives
// wantedMs), so that its release wakes the waiters (see releaseScript).
//
// KEYS: lock, fence, wanted, and on a single server the caller's session
// key. ARGV: session ID, lease ms (0: none), channel, expected value (""
// for none), session key prefix ("" through a Cluster), wanted ms.
// Returns {"taken"|"mine", token}, {"held", value}, or {"lost", ""} if the
// caller's session key is gone (then it changed nothing).
var acquireScript = goredis.NewScript(`
local cur, last
if KEYS[4] then
  local v = redis.call('MGET', KEYS[4], KEYS[1], KEYS[2])
  if not v[1] then
    return {'lost', ''}
  end
  cur, last = v[2], v[3]
else
  local v = redis.call('MGET', KEYS[1], KEYS[2])
  cur, last = v[1], v[2]
end
last = tonumber(last)
if cur then
  local tok, kind, sid = string.match(cur, '^(%d+) (%a) (.*)$')
  if kind == 's' and sid == ARGV[1] then
    return {'mine', tok}
  end
  local gone = cur == ARGV[4] or
    (kind == 's' and ARGV[5] ~= '' and redis.call('EXISTS', ARGV[5] .. sid) == 0)
  if not gone then
    redis.call('SET', KEYS[3], '1', 'PX', ARGV[6])
    return {'held', cur}
  end
end
local now = redis.call('TIME')
local n = tonumber(now[1]) * 1000000 + tonumber(now[2])
if last and last >= n then
  n = last + 1
end
local tok = string.format('%d', n)
local val = tok .. ' s ' .. ARGV[1]
if ARGV[2] ~= '0' then
  redis.call('SET', KEYS[1], val, 'PX', ARGV[2])
  redis.call('SET', KEYS[2], tok)
else
  redis.call('MSET', KEYS[1], val, KEYS[2], tok)
end
redis.call('PUBLISH', ARGV[3], val)
return {'taken', tok}
`)

// wantedMs is how long a lock stays marked wanted after a try found it
// held: a waiter tries again at least once per retry interval, which
// marks it again, so this need only outlast any sensible one.
const wantedMs = 10 * 60 * 1000

// releaseScript frees the lock, or marks it held by nobody alive for a
// hold, if the session holds it under the token ("" for any token), and
// publishes the change: on the lock's channel always (observers), on its
// wake channel only if a try found it held since the last release (the
// wanted mark, read with the lock and deleted if set: a release nobody
// waits for makes no call for it). On a single server it reads the session
// key too: a session that is gone holds nothing, so its lock is freed,
// with no hold left behind.
//
// KEYS: lock, wanted, and on a single server the session key. ARGV:
// session ID, token, hold ms (0: none), channel, wake channel. Returns 1
// if it released the lock, 0 if the session did not hold it, -1 if the
// session key is gone (its lock, if the session held it, is freed).
var releaseScript = goredis.NewScript(`
local cur, wanted, alive = nil, nil, true
if KEYS[3] then
  local v = redis.call('MGET', KEYS[3], KEYS[1], KEYS[2])
  alive, cur, wanted = v[1] ~= false, v[2], v[3]
else
  local v = redis.call('MGET', KEYS[1], KEYS[2])
  cur, wanted = v[1], v[2]
end
local tok, kind, sid
if cur then
  tok, kind, sid = string.match(cur, '^(%d+) (%a) (.*)$')
end
if not cur or kind ~= 's' or sid ~= ARGV[1] or (ARGV[2] ~= '' and tok ~= ARGV[2]) then
  if alive then return 0 end
  return -1
end
if ARGV[3] ~= '0' and alive then
  redis.call('SET', KEYS[1], tok .. ' h ' .. sid, 'PX', ARGV[3])
else
  redis.call('DEL', KEYS[1])
end
redis.call('PUBLISH', ARGV[4], 'released')
if wanted then
  redis.call('DEL', KEYS[2])
  redis.call('PUBLISH', ARGV[5], 'released')
end
if alive then return 1 end
return -1
`)

// undoScript deletes the lock if its value is exactly ARGV[1]: it undoes
// what a call of a session found lost did to a lock.
//
// KEYS: lock. ARGV: value, channel, wake channel. Returns 1 if it deleted
// the lock.
var undoScript = goredis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', ARGV[2], 'released')
  redis.call('PUBLISH', ARGV[3], 'released')
  return 1
end
return 0
`)

// confirmScript finds which of a session's locks no longer hold the value
// it was granted, "<token> s <session ID>": deleted, evicted, expired with
// their lease, or overwritten. It reads them with one MGET per 1,000 keys
// (unpack is bounded by the Lua stack).
//
// KEYS: lock keys. ARGV: session ID, then the token of each lock key in
// order. Returns the indexes (from 1) in KEYS of the locks not as granted.
var confirmScript = goredis.NewScript(`
local suffix = ' s ' .. ARGV[1]
local gone = {}
for first = 1, #KEYS, 1000 do
  local last = math.min(first + 999, #KEYS)
  local vals = redis.call('MGET', unpack(KEYS, first, last))
  for j = 1, #vals do
    local i = first + j - 1
    if vals[j] ~= ARGV[i + 1] .. suffix then
      gone[#gone + 1] = i
    end
  end
end
return gone
`)

// scriptCall is one script run with its keys and arguments.
type scriptCall struct {
	script *goredis.Script
	keys   []string
	args   []any
}

// runChecked runs an acquire or release script with the check of the
// session key: on a single server the script reads the key itself (KEYS
// gains it) and the reply says whether it was alive, one command; through
// a Cluster, see runWithSession. alive is false only through a Cluster.
func (s *session) runChecked(ctx context.Context, c scriptCall) (any, bool, error) {
	if !s.b.oneServer {
		return s.runWithSession(ctx, c)
	}
	c.keys = append(c.keys, s.key)
	open, err := s.opening()
	if err != nil {
		return nil, false, err
	}
	if open {
		// The script reads the key the pipeline's SET NX set before it.
		reply, err := s.openAndRun(ctx, c)
		return reply, true, err
	}
	reply, err := c.script.Run(ctx, s.b.client, c.keys, c.args...).Result()
	if err != nil {
		return nil, false, err
	}
	return reply, true, nil
}

// runWithSession sends the script and an EXISTS of the session key in one
// pipeline, one round trip on a single server, and returns the script's
// reply and whether the session key exists. On a Cluster the two go to
// their own nodes in parallel. The session key is never recreated once
// gone, so if it exists after the script ran, the session was alive when
// it ran. A session whose key is not set yet sets it first, in the same
// pipeline (see opening).
func (s *session) runWithSession(ctx context.Context, c scriptCall) (any, bool, error) {
	open, err := s.opening()
	if err != nil {
		return nil, false, err
	}
	reply, exists, err := s.pipelineRetried(ctx, c, open, true)
	if err != nil {
		return nil, false, err
	}
	return reply.Val(), exists.Val() == 1, nil
}

// openAndRun sends the session key's SET NX and the script in one
// pipeline, for a script that reads the session key itself.
func (s *session) openAndRun(ctx context.Context, c scriptCall) (any, error) {
	reply, _, err := s.pipelineRetried(ctx, c, true, false)
	if err != nil {
		return nil, err
	}
	return reply.Val(), nil
}

// pipelineRetried is pipeline by hash, and again with the source if the
// server did not have the script cached; it records that the session key
// was set if open.
func (s *session) pipelineRetried(ctx context.Context, c scriptCall, open, exists bool) (*goredis.Cmd, *goredis.IntCmd, error) {
	reply, ex, err := s.pipeline(ctx, c, open, exists, false)
	if goredis.HasErrorPrefix(reply.Err(), "NOSCRIPT") {
		// Not cached, so nothing ran: send the source.
		reply, ex, err = s.pipeline(ctx, c, open, exists, true)
	}
	if err == nil && open {
		s.set()
	}
	return reply, ex, err
}

// pipeline sends the session key's SET NX if open, the script (by hash,
// or its source if eval) and, if exists, an EXISTS of the session key, in
// one pipeline.
func (s *session) pipeline(ctx context.Context, c scriptCall, open, exists, eval bool) (*goredis.Cmd, *goredis.IntCmd, error) {
	var reply *goredis.Cmd
	var ex *goredis.IntCmd
	_, err := s.b.client.Pipelined(ctx, func(p goredis.Pipeliner) error {
		if open {
			p.SetNX(ctx, s.key, s.id, s.ttl)
		}
		if eval {
			reply = c.script.Eval(ctx, p, c.keys, c.args...)
		} else {
			reply = c.script.EvalSha(ctx, p, c.keys, c.args...)
		}
		if exists {
			ex = p.Exists(ctx, s.key)
		}
		return nil
	})
	return reply, ex, err
}
