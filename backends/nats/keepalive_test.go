package nats_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hustings/hustings/backends/backendtest"
	"github.com/hustings/hustings/backends/nats"
	"github.com/hustings/hustings/backends/nats/natstest"
	"github.com/hustings/hustings/internal/testserver"
)

// TestKeepAliveIsOneRequest: a session whose losses are pushed, holding
// 3,000 locks, sends one message a keep-alive (the renewal; the feed
// confirms the locks), and a lock deleted behind its back is still
// reported; one whose losses are not pushed sends the renewal and one
// multi-key get per 1,024 locks.
func TestKeepAliveIsOneRequest(t *testing.T) {
	srv := natstest.Start(t)
	for _, tc := range []struct {
		name   string
		pushed bool
		want   uint64
	}{{"pushed", true, 1}, {"read", false, 1 + 3}} {
		t.Run(tc.name, func(t *testing.T) {
			nc := natstest.Conn(t, srv.URL())
			js, err := jetstream.New(nc)
			if err != nil {
				t.Fatal(err)
			}
			if err := nats.CreateBucket(t.Context(), js); err != nil {
				t.Fatal(err)
			}
			b, err := nats.New(js)
			if err != nil {
				t.Fatal(err)
			}
			s := backendtest.Open(t, b, "many", 10*time.Second)
			if tc.pushed {
				s.Losses()
			}
			names := backendtest.Names("keepalive-"+tc.name, 3000)
			backendtest.AcquireAtOnce(t, s, names)
			for range 2 { // the first covers the locks taken before the feed ran
				if err := s.KeepAlive(t.Context()); err != nil {
					t.Fatal(err)
				}
			}
			before := nc.Stats().OutMsgs
			if err := s.KeepAlive(t.Context()); err != nil {
				t.Fatal(err)
			}
			if sent := nc.Stats().OutMsgs - before; sent != tc.want {
				t.Fatalf("a keep-alive of 3,000 locks sent %d messages, want %d", sent, tc.want)
			}
			kv, err := js.KeyValue(t.Context(), nats.DefaultBucket)
			if err != nil {
				t.Fatal(err)
			}
			if err := kv.Delete(t.Context(), nats.LockKey(names[7])); err != nil {
				t.Fatal(err)
			}
			testserver.Eventually(t, "the deleted lock reported lost", 30*time.Second, func() bool {
				if s.Lost()[names[7]] != 0 {
					return true
				}
				if err := s.KeepAlive(t.Context()); err != nil {
					t.Fatal(err)
				}
				return false
			})
			if len(s.Lost()) != 1 {
				t.Fatalf("Lost() = %d locks, want 1", len(s.Lost()))
			}
		})
	}
}
