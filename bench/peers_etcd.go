package main

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// etcdPeers are etcd's own concurrency package: Mutex on one long-lived
// session (its usual use), Mutex on a session per lock (like a one-shot
// RunIfLeader, which opens a lease per run), and Election.
func etcdPeers(newClient func() (*clientv3.Client, error)) []peer {
	ttl := int(peerTTL.Seconds())
	return []peer{
		{
			name: "etcd Mutex",
			note: fmt.Sprintf("concurrency.Mutex on one session (lease TTL %d s) per candidate", ttl),
			open: func(ctx context.Context) (locker, error) { return openEtcdLocker(ctx, newClient, ttl, etcdMutex) },
		},
		{
			name: "etcd Mutex, session per lock",
			note: fmt.Sprintf("concurrency.Mutex on a new session (lease TTL %d s) for each lock, closed after", ttl),
			open: func(ctx context.Context) (locker, error) {
				cli, err := newClient()
				if err != nil {
					return nil, err
				}
				return etcdLocker{cli: cli, kind: etcdMutex, ttl: ttl}, nil
			},
		},
		{
			name: "etcd Election",
			note: fmt.Sprintf("concurrency.Election Campaign / Resign on one session (lease TTL %d s) per candidate", ttl),
			open: func(ctx context.Context) (locker, error) { return openEtcdLocker(ctx, newClient, ttl, etcdElection) },
		},
	}
}

type etcdKind int

const (
	etcdMutex etcdKind = iota
	etcdElection
)

// etcdLocker runs critical sections under an etcd Mutex or Election; with
// a nil sess it opens a session per run.
type etcdLocker struct {
	cli  *clientv3.Client
	sess *concurrency.Session
	kind etcdKind
	ttl  int
}

func openEtcdLocker(ctx context.Context, newClient func() (*clientv3.Client, error), ttl int, kind etcdKind) (locker, error) {
	cli, err := newClient()
	if err != nil {
		return nil, err
	}
	sess, err := concurrency.NewSession(cli, concurrency.WithTTL(ttl), concurrency.WithContext(ctx))
	if err != nil {
		_ = cli.Close()
		return nil, err
	}
	return etcdLocker{cli: cli, sess: sess, kind: kind, ttl: ttl}, nil
}

func (e etcdLocker) run(ctx context.Context, name string, cs func()) error {
	sess := e.sess
	if sess == nil {
		s, err := concurrency.NewSession(e.cli, concurrency.WithTTL(e.ttl), concurrency.WithContext(ctx))
		if err != nil {
			return err
		}
		defer s.Close()
		sess = s
	}
	if e.kind == etcdElection {
		el := concurrency.NewElection(sess, "/peer/election/"+name)
		if err := el.Campaign(ctx, "candidate"); err != nil {
			return err
		}
		cs()
		return el.Resign(ctx)
	}
	m := concurrency.NewMutex(sess, "/peer/mutex/"+name)
	if err := m.Lock(ctx); err != nil {
		return err
	}
	cs()
	return m.Unlock(ctx)
}

func (e etcdLocker) close() {
	if e.sess != nil {
		_ = e.sess.Close()
	}
	_ = e.cli.Close()
}
