package main

import (
	"context"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/hustings/hustings/backends/zookeeper/zktest"
)

// zkPeers is go-zookeeper's Lock (ephemeral sequential nodes, a watch on
// the predecessor), on a conn per candidate.
func zkPeers(addr string) []peer {
	return []peer{{
		name: "zk Lock",
		note: fmt.Sprintf("go-zookeeper Lock on a conn per candidate, session timeout %v", zkSessionTimeout),
		open: func(context.Context) (locker, error) {
			conn, err := zktest.Dial(addr, zkSessionTimeout)
			if err != nil {
				return nil, err
			}
			return zkLocker{conn: conn}, nil
		},
	}}
}

type zkLocker struct{ conn *zk.Conn }

// run takes the lock; go-zookeeper's Lock takes no context, so a wait
// ends only when the lock is had.
func (z zkLocker) run(_ context.Context, name string, cs func()) error {
	l := zk.NewLock(z.conn, "/peer/zklock/"+name, zk.WorldACL(zk.PermAll))
	if err := l.Lock(); err != nil {
		return err
	}
	cs()
	return l.Unlock()
}

func (z zkLocker) close() { z.conn.Close() }
