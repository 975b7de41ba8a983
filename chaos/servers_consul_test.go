package chaos

import (
	"context"
	"fmt"
	"testing"

	"github.com/hashicorp/consul/api"

	"github.com/hustings/hustings/backends/consul"
	"github.com/hustings/hustings/backends/consul/consultest"
	"github.com/hustings/hustings/events"
)

// startConsul runs a durable Consul server (package consultest): down is
// a crash (SIGKILL), up a restart on the same raft data.
func startConsul(t *testing.T) server {
	s := consultest.Start(t, consultest.Durable())
	c, err := s.Client()
	if err != nil {
		t.Fatal(err)
	}
	b, err := consul.New(c)
	if err != nil {
		t.Fatal(err)
	}
	return server{
		addr: s.Addr(),
		url:  func(a string) string { return "consul://" + a },
		down: s.Kill,
		up:   s.Restart,
		tamper: func(ctx context.Context, name string, token events.Token) error {
			// A delete of the lock's key, as `consul kv delete -cas`
			// makes it: the feed pushes it to the holder and the waiters.
			// The token is the ModifyIndex of the take's write, which
			// nothing rewrites during the term.
			key := b.LockKey(name)
			ok, _, err := c.KV().DeleteCAS(&api.KVPair{Key: key, ModifyIndex: uint64(token)}, (&api.WriteOptions{}).WithContext(ctx))
			if err == nil && !ok {
				err = fmt.Errorf("no lock %s under token %d to delete", key, token)
			}
			return err
		},
	}
}
