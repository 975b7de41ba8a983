package redis

import (
	"context"

	goredis "github.com/redis/go-redis/v9"
)

// The scripts but confirmScript touch only the keys of one lock, which
// share a hash slot; none reads a session key, which lives in a slot of
// its own. confirmScript reads the lock keys of many names, so it runs on
// a single server only (see Backend.oneServer). They are run with EVALSHA,
// and with EVAL when the server does not have them cached.

// acquireScript takes the lock if it is free, or if its value is exactly
// ARGV[4] (a holder whose session the caller found gone; session keys are
// never recreated, so that is a stable fact). The token is the next value
// of the fencing counter, but never less than the server's clock in
// microseconds, so tokens keep increasing if the server loses its data.
//
// KEYS: lock, fence. ARGV: session ID, lease ms (0: none), channel,
// expected value ("" for none). Returns {"taken"|"mine", token} or
// {"held", value}.
var acquireScript = goredis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if cur then
  local tok, kind, sid = string.match(cur, '^(%d+) (%a) (.*)$')
  if kind == 's' and sid == ARGV[1] then
    return {'mine', tok}
  end
  if cur ~= ARGV[4] then
    return {'held', cur}
  end
end
local now = redis.call('TIME')
local floor = tonumber(now[1]) * 1000000 + tonumber(now[2])
local n = redis.call('INCR', KEYS[2])
if n < floor then
  n = floor
  redis.call('SET', KEYS[2], string.format('%d', n))
end
local tok = string.format('%d', n)
local val = tok .. ' s ' .. ARGV[1]
if ARGV[2] ~= '0' then
  redis.call('SET', KEYS[1], val, 'PX', ARGV[2])
else
  redis.call('SET', KEYS[1], val)
end
redis.call('PUBLISH', ARGV[3], 'acquired')
return {'taken', tok}
`)

// releaseScript frees the lock, or marks it held by nobody alive for a
// hold, if the session holds it under the token ("" for any token).
//
// KEYS: lock. ARGV: session ID, token, hold ms (0: none), channel.
// Returns 1 if it released the lock, 0 if the session did not hold it.
var releaseScript = goredis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if not cur then
  return 0
end
local tok, kind, sid = string.match(cur, '^(%d+) (%a) (.*)$')
if kind ~= 's' or sid ~= ARGV[1] or (ARGV[2] ~= '' and tok ~= ARGV[2]) then
  return 0
end
if ARGV[3] ~= '0' then
  redis.call('SET', KEYS[1], tok .. ' h ' .. sid, 'PX', ARGV[3])
else
  redis.call('DEL', KEYS[1])
end
redis.call('PUBLISH', ARGV[4], 'released')
return 1
`)

// undoScript deletes the lock if its value is exactly ARGV[1]: it undoes
// what a call of a session found lost did to a lock.
//
// KEYS: lock. ARGV: value, channel. Returns 1 if it deleted the lock.
var undoScript = goredis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', ARGV[2], 'released')
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
	reply, exists, err := s.pipeline(ctx, c, open, false)
	if goredis.HasErrorPrefix(reply.Err(), "NOSCRIPT") {
		// Not cached, so nothing ran: send the source.
		reply, exists, err = s.pipeline(ctx, c, open, true)
	}
	if err != nil {
		return nil, false, err
	}
	if open {
		s.set()
	}
	return reply.Val(), exists.Val() == 1, nil
}

// pipeline sends the session key's SET NX if open, the script (by hash,
// or its source if eval) and the EXISTS in one pipeline.
func (s *session) pipeline(ctx context.Context, c scriptCall, open, eval bool) (*goredis.Cmd, *goredis.IntCmd, error) {
	var reply *goredis.Cmd
	var exists *goredis.IntCmd
	_, err := s.b.client.Pipelined(ctx, func(p goredis.Pipeliner) error {
		if open {
			p.SetNX(ctx, s.key, s.id, s.ttl)
		}
		if eval {
			reply = c.script.Eval(ctx, p, c.keys, c.args...)
		} else {
			reply = c.script.EvalSha(ctx, p, c.keys, c.args...)
		}
		exists = p.Exists(ctx, s.key)
		return nil
	})
	return reply, exists, err
}
