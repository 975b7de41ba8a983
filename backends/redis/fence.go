package redis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/validate"
)

// fencePreamble runs before the caller's script. It takes the lock key and
// the token, which Fence appends to KEYS and ARGV, off again, so the
// caller's KEYS[i] and ARGV[i] are numbered as the caller passed them, and
// refuses unless the lock key holds "<token> s <session ID>". It is one
// line with no newline, so the line numbers in Redis's error messages are
// the caller's own; its locals end with its do block.
const fencePreamble = `do local lock, tok = table.remove(KEYS), table.remove(ARGV) ` +
	`local cur = redis.call('GET', lock) ` +
	`if not cur or string.match(cur, '^%d+ %a') ~= tok .. ' s' then ` +
	`return redis.error_reply('` + notHeldReply + ` ' .. (cur or '')) end end `

// notHeldReply starts the error reply of a refused fence; the lock key's
// value, if any, follows.
const notHeldReply = "HUSTINGS_NOT_HELD"

// transientReplies start the error replies of a server that cannot run a
// script now but may soon: they match backends.ErrUnavailable.
var transientReplies = []string{"LOADING", "READONLY", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN", "BUSY", "OOM"}

// Fence runs the Lua script with keys and args (as EVAL does) only if
// the lock name is still held under token, in the same script run, so no
// other term can begin between the check and the script's writes: a write
// made there is ordered before any later holder's term, and a stale
// holder's script does not run at all. The lock's key and the token are
// passed as one more key and argument, last, and taken off again before
// the script runs: the script sees KEYS and ARGV as the caller gave them.
// A first line "#!lua ..." (flags) stays first.
//
// The check reads the lock key: it must hold token for a session, as
// Acquire granted it. A lock that is free, held under another token or
// released with a hold returns an error matching backends.ErrNotHeld, and
// so does token 0, without a round trip; the script is then not run. The
// holder's session key is in a slot of its own and is not read: a holder
// whose session expired passes until another session takes the lock over
// (which rewrites the key), so its writes still come before the next term.
//
// Every key must be in the lock's hash slot, the slot of HashTag(name)
// (see the Redis Cluster section of the package doc): name the keys with
// it, as in HashTag(name)+":balance". A key of another slot returns an
// error matching backends.ErrInvalid, which names the tag, on a single
// server too, so that code tested there runs on a Cluster.
//
// It returns what the script returns, converted as go-redis's Eval does;
// a script that returns nil or false returns nil and no error. An error
// the script raises (error(), redis.error_reply, a failed redis.call) is
// returned wrapped, and can be read with errors.As into a goredis.Error;
// the writes the script made before it, Redis keeps. Failures to reach
// Redis, and the replies of a server that cannot run scripts now
// (LOADING, READONLY, BUSY, ...), match backends.ErrUnavailable. It
// sends an EVALSHA, and an EVAL the first time a server sees the script.
func (b *Backend) Fence(ctx context.Context, name string, token events.Token, script string, keys []string, args ...any) (any, error) {
	if err := validate.Name(name); err != nil {
		return nil, err
	}
	lock := b.keys(name).lock
	if err := sameSlot(name, lock, keys); err != nil {
		return nil, err
	}
	if token == 0 {
		return nil, fmt.Errorf("%w: %q under token 0", backends.ErrNotHeld, name)
	}
	if err := ctx.Err(); err != nil {
		return nil, unavailable(ctx, "fenced eval", err)
	}
	keys = append(slices.Clip(keys), lock)
	args = append(slices.Clip(args), strconv.FormatUint(uint64(token), 10))
	v, err := goredis.NewScript(fenced(script)).Run(ctx, b.client, keys, args...).Result()
	if err != nil {
		return nil, fenceError(ctx, name, token, err)
	}
	return v, nil
}

// fenced returns script with the preamble before its body, after its
// first line if that is a shebang.
func fenced(script string) string {
	if !strings.HasPrefix(script, "#!") {
		return fencePreamble + script
	}
	head, body, _ := strings.Cut(script, "\n")
	return head + "\n" + fencePreamble + body
}

// fenceError translates an error of a fenced script run.
func fenceError(ctx context.Context, name string, token events.Token, err error) error {
	var reply goredis.Error
	switch {
	case errors.Is(err, goredis.Nil):
		return nil
	case !errors.As(err, &reply):
		return unavailable(ctx, "fenced eval", err)
	case strings.HasPrefix(err.Error(), notHeldReply):
		return notHeld(name, token, strings.TrimSpace(strings.TrimPrefix(err.Error(), notHeldReply)))
	}
	for _, p := range transientReplies {
		if strings.HasPrefix(err.Error(), p) {
			return unavailable(ctx, "fenced eval", err)
		}
	}
	return fmt.Errorf("redis: fenced eval for %q: %w", name, err)
}

// notHeld describes a lock found not held under token; raw is its key's
// value, "" if it has none.
func notHeld(name string, token events.Token, raw string) error {
	if raw == "" {
		return fmt.Errorf("%w: %q is free, not held under token %d", backends.ErrNotHeld, name, token)
	}
	v, err := parseValue(raw)
	switch {
	case err != nil:
		return fmt.Errorf("%w: %q is not held under token %d: %w", backends.ErrNotHeld, name, token, err)
	case v.held:
		return fmt.Errorf("%w: %q was released with a hold by %s under token %d, not held under token %d", backends.ErrNotHeld, name, v.id(), v.token, token)
	}
	return fmt.Errorf("%w: %q is held by %s under token %d, not under token %d", backends.ErrNotHeld, name, v.id(), v.token, token)
}
