package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	goredis "github.com/redis/go-redis/v9"

	"github.com/hustings/hustings/events"
)

// held is a lock KeepAlive confirms: its name and the token Acquire granted.
type held struct {
	name string
	tok  events.Token
}

// KeepAlive renews the session key, and so every lock of the session, and
// confirms every lock the session was granted and has not released, in
// one pipeline: a PEXPIRE, and on a single server one confirmScript over
// all the locks (O(1) commands, one round trip), elsewhere one GET per
// lock (one round trip to each server, in parallel). Without locks it is
// the PEXPIRE alone. PEXPIRE never creates a key: a session that expired
// stays lost. (A session whose key is not set yet, see Open, sets it
// first in the same pipeline.) Locks found not as granted go to the ledger, for Lost; the
// call still succeeds. If the confirmation fails (an error from Redis, a
// node of a Cluster out of reach), so does KeepAlive, with
// backends.ErrUnavailable, although the session key may have been
// renewed: a caller counts its lease from the last KeepAlive that
// succeeded, so failing is the safe side.
func (s *session) KeepAlive(ctx context.Context) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return unavailable(ctx, "keep-alive", err)
	}
	granted := s.ledger.Held()
	locks := make([]held, 0, len(granted))
	for name, tok := range granted {
		locks = append(locks, held{name, tok})
	}
	open, err := s.opening()
	if err != nil {
		return err
	}
	alive, gone, err := s.renew(ctx, locks, open, false)
	if err != nil {
		return unavailable(ctx, "keep-alive", err)
	}
	if open {
		s.set()
	}
	if !alive {
		return s.lost()
	}
	for _, i := range gone {
		s.ledger.Gone(locks[i].name, locks[i].tok)
	}
	s.kickLosses() // the loss watch follows the locks held across this renewal
	return nil
}

// renew sends the PEXPIRE of the session key and the confirmation of
// locks in one pipeline, confirmScript by hash or, if eval, by source. It
// reports whether the session key existed and the indexes in locks of
// those found gone (meaningless if it did not exist).
func (s *session) renew(ctx context.Context, locks []held, open, eval bool) (alive bool, gone []int, err error) {
	var pexpire *goredis.BoolCmd
	var script *goredis.Cmd
	gets := make([]*goredis.StringCmd, 0, len(locks))
	_, err = s.b.client.Pipelined(ctx, func(p goredis.Pipeliner) error {
		if open {
			p.SetNX(ctx, s.key, s.id, s.ttl) // see opening
		}
		pexpire = p.PExpire(ctx, s.key, s.ttl)
		switch {
		case len(locks) == 0:
		case s.b.oneServer:
			script = s.confirm(ctx, p, locks, eval)
		default:
			for _, l := range locks {
				gets = append(gets, p.Get(ctx, s.b.keys(l.name).lock))
			}
		}
		return nil
	})
	if script != nil && !eval && goredis.HasErrorPrefix(script.Err(), "NOSCRIPT") {
		return s.renew(ctx, locks, open, true) // not cached: send the source
	}
	var reply goredis.Error
	if err != nil && !errors.As(err, &reply) {
		return false, nil, err // not an error of one command: nothing is known
	}
	if err := pexpire.Err(); err != nil {
		return false, nil, err
	}
	if !pexpire.Val() {
		return false, nil, nil
	}
	if script != nil {
		gone, err = scriptGone(script, len(locks))
		return err == nil, gone, err
	}
	for i, g := range gets {
		switch val, err := g.Result(); {
		case err == goredis.Nil, goredis.HasErrorPrefix(err, "WRONGTYPE"):
			gone = append(gone, i)
		case err != nil:
			return false, nil, err
		case val != s.value(locks[i].tok):
			gone = append(gone, i)
		}
	}
	return true, gone, nil
}

// confirm queues confirmScript over locks on p.
func (s *session) confirm(ctx context.Context, p goredis.Pipeliner, locks []held, eval bool) *goredis.Cmd {
	keys := make([]string, len(locks))
	args := make([]any, len(locks)+1)
	args[0] = s.sid
	for i, l := range locks {
		keys[i] = s.b.keys(l.name).lock
		args[i+1] = strconv.FormatUint(uint64(l.tok), 10)
	}
	if eval {
		return confirmScript.Eval(ctx, p, keys, args...)
	}
	return confirmScript.EvalSha(ctx, p, keys, args...)
}

// scriptGone turns confirmScript's reply over n locks, indexes from 1,
// into indexes from 0.
func scriptGone(c *goredis.Cmd, n int) ([]int, error) {
	reply, err := c.Int64Slice()
	if err != nil {
		return nil, err
	}
	gone := make([]int, len(reply))
	for i, x := range reply {
		if x < 1 || x > int64(n) {
			return nil, fmt.Errorf("confirm script: index %d of %d locks", x, n)
		}
		gone[i] = int(x) - 1
	}
	return gone, nil
}

// value is what the lock key of a lock this session holds under tok
// holds (see acquireScript).
func (s *session) value(tok events.Token) string {
	return fmt.Sprintf("%d s %s", tok, s.sid)
}
