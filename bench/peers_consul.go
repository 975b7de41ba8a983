package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/consul/api"
)

// consulPeers is Consul's own lock, api.Lock (LockKey's options, with the
// peers' TTL): a session per Lock, a KV acquire, a blocking query on the
// key while another holds it, a release and the session's destroy on
// Unlock; its lock-delay stays Consul's default (15 s after a holder's
// session is invalidated, none after a release).
func consulPeers(addr string) []peer {
	return []peer{{
		name: "api.Lock (consul/api)",
		note: fmt.Sprintf("Client.LockOpts{SessionTTL: %v}, Lock / Unlock per run; a waiter blocks on the key; lock-delay Consul's default (15 s after a crash); no fencing token but the key's LockIndex", peerTTL),
		open: func(context.Context) (locker, error) {
			c, err := consulClient(addr, nil)
			if err != nil {
				return nil, err
			}
			return &consulLocker{c: c}, nil
		},
	}}
}

type consulLocker struct{ c *api.Client }

func (l *consulLocker) run(ctx context.Context, name string, cs func()) error {
	lock, err := l.c.LockOpts(&api.LockOptions{Key: "bench-peer/" + name, SessionTTL: peerTTL.String()})
	if err != nil {
		return err
	}
	lost, err := lock.Lock(ctx.Done())
	switch {
	case err != nil:
		return err
	case lost == nil:
		return ctx.Err()
	}
	cs()
	if err := lock.Unlock(); err != nil && !errors.Is(err, api.ErrLockNotHeld) {
		return err
	}
	return nil
}

func (l *consulLocker) close() {}
