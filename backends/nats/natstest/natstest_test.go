package natstest_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/hustings/hustings/backends/nats/natstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestKillRestart: a key written before a crash is there after Restart,
// under the same revision, and the next write gets a larger one.
func TestKillRestart(t *testing.T) {
	s := natstest.Start(t)
	nc := natstest.Conn(t, s.URL())
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "kept"})
	if err != nil {
		t.Fatal(err)
	}
	rev, err := kv.Put(ctx, "k", []byte("v"))
	if err != nil {
		t.Fatal(err)
	}
	pid := s.PID()
	s.Kill()
	if s.PID() != 0 {
		t.Fatal("PID after Kill is not 0")
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if s.PID() == 0 || s.PID() == pid {
		t.Fatalf("PID after Restart = %d (was %d)", s.PID(), pid)
	}
	var e jetstream.KeyValueEntry
	for e == nil { // the connection comes back on its own
		if e, err = kv.Get(ctx, "k"); err != nil {
			if ctx.Err() != nil {
				t.Fatalf("Get after Restart: %v", err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if string(e.Value()) != "v" || e.Revision() != rev {
		t.Fatalf("after Restart: %q at %d, want %q at %d", e.Value(), e.Revision(), "v", rev)
	}
	next, err := kv.Put(ctx, "k", []byte("w"))
	if err != nil || next <= rev {
		t.Fatalf("Put after Restart = %d, %v; want a revision > %d", next, err, rev)
	}
}

func TestPauseResume(t *testing.T) {
	s := natstest.Start(t)
	nc := natstest.Conn(t, s.URL())
	if err := s.Pause(); err != nil {
		t.Fatal(err)
	}
	if err := nc.FlushTimeout(300 * time.Millisecond); err == nil {
		t.Fatal("a paused server answered a flush")
	}
	if err := s.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := nc.FlushTimeout(10 * time.Second); err != nil {
		t.Fatalf("flush after Resume: %v", err)
	}
}

func TestStopTwice(t *testing.T) {
	s, err := natstest.StartServer()
	if err != nil {
		t.Fatal(err)
	}
	s.Stop()
	s.Stop()
	if err := s.Restart(); err == nil {
		t.Fatal("Restart after Stop succeeded")
	}
}

// TestCluster: a bucket of three replicas on a cluster of three nodes
// takes writes through any node, and goes on when one node is killed.
func TestCluster(t *testing.T) {
	c := natstest.StartCluster(t, 3)
	nc := natstest.Conn(t, c.Servers[0].URL())
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "r3", Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	rev, err := kv.Put(ctx, "k", []byte("v"))
	if err != nil {
		t.Fatal(err)
	}
	c.Servers[2].Kill()
	var next uint64
	for next == 0 { // the stream may be electing a leader
		// Each try is bounded on its own: a publish whose stream leader
		// was the node killed gets no ack, and would otherwise wait for
		// the whole test's deadline instead of being sent again.
		try, stop := context.WithTimeout(ctx, 5*time.Second)
		next, err = kv.Put(try, "k", []byte("w"))
		stop()
		if err != nil {
			if ctx.Err() != nil {
				t.Fatalf("Put with a node down: %v", err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if next <= rev {
		t.Fatalf("revision %d after %d", next, rev)
	}
}
