package etcd_test

import (
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hustings/hustings/backends/backendtest"
	"github.com/hustings/hustings/backends/etcd"
	"github.com/hustings/hustings/backends/etcd/etcdtest"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
)

// TestLeaderLearnsOfTamperingAtOnce: a leader whose lock key is deleted,
// or whose session lease is revoked, from outside learns of it from its
// session's watch, not at its next renewal: with a TTL of 30 s (renewals
// 10 s apart) it is revoked, lock lost, well within 5 s (a generous bound:
// the push takes milliseconds).
func TestLeaderLearnsOfTamperingAtOnce(t *testing.T) {
	const ttl, within = 30 * time.Second, 5 * time.Second
	tamper := map[string]func(t *testing.T, cli *clientv3.Client, b *etcd.Backend){
		"DeleteKey": func(t *testing.T, cli *clientv3.Client, b *etcd.Backend) {
			deleteLock(cli)(t, b, "pushed")
		},
		"RevokeLease": func(t *testing.T, cli *clientv3.Client, _ *etcd.Backend) {
			if _, err := cli.Revoke(t.Context(), leaseOf(t, cli)); err != nil {
				t.Fatalf("Revoke out of band: %v", err)
			}
		},
	}
	for name, f := range tamper {
		t.Run(name, func(t *testing.T) {
			cli := etcdtest.Start(t).Client(t)
			b := newBackend(t, cli)
			a := backendtest.Record(t, b, "pushed", "a", campaign.WithTTL(ttl))
			a.Expect(t, events.Elected, 10*time.Second)
			f(t, cli, b)
			r := a.Expect(t, events.Revoked, within)
			if !errors.Is(r.Reason, events.ErrLockLost) {
				t.Errorf("revoked with %v, want lock lost", r.Reason)
			}
		})
	}
}
