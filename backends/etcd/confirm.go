package etcd

import (
	"context"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hustings/hustings/events"
)

// maxTxnOps is etcd's default limit (--max-txn-ops) on the compares of one
// transaction, and on the operations of each of its branches. A server
// configured lower refuses the confirming transactions of a session that
// holds more locks than its limit.
const maxTxnOps = 128

// held is a lock the session believes it holds, as KeepAlive confirms it.
type held struct {
	name  string
	key   string
	token events.Token
	guard clientv3.LeaseID // 0: acquired without a lease
}

// compares is how many compares confirming l takes: its key, and its
// guard key if it has one.
func (l held) compares() int {
	if l.guard != 0 {
		return 2
	}
	return 1
}

// in reports whether kvs, a read of l's key and its guard keys, shows l
// still held: its key untouched since the Acquire that created it at
// l.token, and its guard, if any, still there.
func (l held) in(kvs []*mvccpb.KeyValue) bool {
	lock, guard := false, l.guard == 0
	for _, kv := range kvs {
		switch {
		case string(kv.Key) == l.key:
			lock = kv.ModRevision == int64(l.token)
		case l.guard != 0 && string(kv.Key) == guardKey(l.key, l.guard):
			guard = true
		}
	}
	return lock && guard
}

// held returns the locks Acquire granted the session and it has neither
// released nor found gone, with their guard leases.
func (s *session) held() []held {
	toks := s.ledger.Held()
	s.mu.Lock()
	defer s.mu.Unlock()
	locks := make([]held, 0, len(toks))
	for name, tok := range toks {
		locks = append(locks, held{name: name, key: s.b.lockKey(name), token: tok, guard: s.guards[name]})
	}
	return locks
}

// chunks splits locks into groups whose confirmation fits in one
// transaction: at most maxTxnOps compares (and so as many reads).
func chunks(locks []held) [][]held {
	var out [][]held
	start, cmps := 0, 0
	for i, l := range locks {
		if cmps+l.compares() > maxTxnOps {
			out = append(out, locks[start:i])
			start, cmps = i, 0
		}
		cmps += l.compares()
	}
	if start < len(locks) {
		out = append(out, locks[start:])
	}
	return out
}

// confirm checks, in one read-only transaction, that the session still
// holds locks, and returns those it no longer does. A lock is held while
// its key's mod revision is its token, which is the key's create revision
// (Acquire created it, and nothing but Release writes it after): a
// deleted, recreated, overwritten or rebound key fails the compare.
// When every compare holds the answer is empty; otherwise it reads each
// key with its guard keys, to tell which failed. It also returns the
// revision it read at.
func (s *session) confirm(ctx context.Context, locks []held) ([]held, int64, error) {
	cmps := make([]clientv3.Cmp, 0, len(locks))
	reads := make([]clientv3.Op, 0, len(locks))
	for _, l := range locks {
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(l.key), "=", int64(l.token)))
		if l.guard != 0 {
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(guardKey(l.key, l.guard)), ">", 0))
		}
		reads = append(reads, clientv3.OpGet(l.key, clientv3.WithRange(watchEnd(l.key)), clientv3.WithKeysOnly()))
	}
	resp, err := s.b.client.Txn(ctx).If(cmps...).Else(reads...).Commit()
	if err != nil {
		return nil, 0, translate(ctx, "keep-alive: confirm locks", err)
	}
	if resp.Succeeded {
		return nil, resp.Header.Revision, nil
	}
	var gone []held
	for i, l := range locks {
		if !l.in(resp.Responses[i].GetResponseRange().Kvs) {
			gone = append(gone, l)
		}
	}
	return gone, resp.Header.Revision, nil
}
