package redis_test

import (
	"context"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/hustings/hustings/backends/redis"
	"github.com/hustings/hustings/backends/redis/redistest"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
)

// TestOneShotRunRoundTrips: a RunIfLeader without a session is two round
// trips on a single server (Open sends nothing: the session key's SET NX
// travels in the acquire's pipeline, and Close alone frees the lock), and
// three on a Cluster, where Open sets the key first.
func TestOneShotRunRoundTrips(t *testing.T) {
	single := redistest.Start(t)
	cluster := redistest.Start(t, redistest.Cluster())
	for _, tt := range []struct {
		name   string
		client goredis.UniversalClient
		want   int
	}{
		{"single", redistest.Client(t, single.Addr()), 2},
		{"cluster", redistest.ClusterClient(t, cluster.Addr()), 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			hook := &counter{}
			tt.client.AddHook(hook)
			b, err := redis.New(tt.client)
			if err != nil {
				t.Fatal(err)
			}
			var tok events.Token
			run := func() {
				res, err := campaign.RunIfLeader(t.Context(), b, "job", func(_ context.Context, t events.Token) (int, error) {
					tok = t
					return 0, nil
				})
				if err != nil || res.Outcome != campaign.Succeeded {
					t.Fatalf("RunIfLeader = %+v, %v", res, err)
				}
			}
			run() // loads the scripts
			first := tok
			hook.reset()
			run()
			if trips, sent := hook.reset(); trips != tt.want {
				t.Errorf("a run made %d round trips (%v), want %d", trips, sent, tt.want)
			}
			if tok <= first {
				t.Errorf("second run's token %d, want above the first's %d", tok, first)
			}
			if h, err := b.Holder(t.Context(), "job"); err != nil || h.ID != "" {
				t.Errorf("after the runs the lock is held by %+v (%v), want free", h, err)
			}
		})
	}
}
