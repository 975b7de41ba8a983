package consultest_test

import (
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/hustings/hustings/backends/consul/consultest"
)

func client(t *testing.T, s *consultest.Server) *api.Client {
	t.Helper()
	c, err := s.Client()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestSessionAcquire: what a Consul backend is built on. A session with a
// TTL acquires a key; a second session cannot while the first holds it;
// the key's LockIndex counts acquisitions (a fencing token); once the
// first releases, the second acquires, and LockIndex moves on.
func TestSessionAcquire(t *testing.T) {
	s := consultest.Start(t)
	c := client(t, s)
	newSession := func(name string) string {
		t.Helper()
		id, _, err := c.Session().Create(&api.SessionEntry{
			Name: name, TTL: "10s", Behavior: api.SessionBehaviorDelete, LockDelay: time.Millisecond,
		}, nil)
		if err != nil {
			t.Fatalf("create session %s: %v", name, err)
		}
		return id
	}
	s1, s2 := newSession("s1"), newSession("s2")
	acquire := func(session, value string) bool {
		t.Helper()
		ok, _, err := c.KV().Acquire(&api.KVPair{Key: "locks/a", Value: []byte(value), Session: session}, nil)
		if err != nil {
			t.Fatalf("acquire by %s: %v", value, err)
		}
		return ok
	}
	get := func() *api.KVPair {
		t.Helper()
		kv, _, err := c.KV().Get("locks/a", &api.QueryOptions{RequireConsistent: true})
		if err != nil || kv == nil {
			t.Fatalf("get: %v, %v", kv, err)
		}
		return kv
	}

	if !acquire(s1, "s1") {
		t.Fatal("s1 did not acquire a free key")
	}
	first := get()
	if first.Session != s1 || first.LockIndex != 1 {
		t.Fatalf("after s1's acquire: session %q, LockIndex %d; want %q, 1", first.Session, first.LockIndex, s1)
	}
	if acquire(s2, "s2") {
		t.Fatal("s2 acquired a key s1 holds")
	}
	if _, _, err := c.KV().Release(&api.KVPair{Key: "locks/a", Session: s1}, nil); err != nil {
		t.Fatal(err)
	}
	// The lock delay (1 ms here) holds the key from others after a
	// release by a session's end, not by Release; try a few times anyway.
	deadline := time.Now().Add(10 * time.Second)
	for !acquire(s2, "s2") {
		if time.Now().After(deadline) {
			t.Fatal("s2 did not acquire the key s1 released")
		}
		time.Sleep(10 * time.Millisecond)
	}
	second := get()
	if second.Session != s2 || second.LockIndex != 2 || second.ModifyIndex <= first.ModifyIndex {
		t.Fatalf("after s2's acquire: session %q, LockIndex %d, ModifyIndex %d (was %d); want %q, 2, larger",
			second.Session, second.LockIndex, second.ModifyIndex, first.ModifyIndex, s2)
	}

	// Destroying the holder's session deletes the key (Behavior delete).
	if _, err := c.Session().Destroy(s2, nil); err != nil {
		t.Fatal(err)
	}
	kv, _, err := c.KV().Get("locks/a", &api.QueryOptions{RequireConsistent: true})
	if err != nil || kv != nil {
		t.Fatalf("after the holder's session ended: %v, %v; want no key", kv, err)
	}
}

// TestKillRestart: a killed server answers nothing; a restarted one
// answers on the same address, empty (a dev agent keeps no state).
func TestKillRestart(t *testing.T) {
	s := consultest.Start(t)
	c := client(t, s)
	if _, err := c.KV().Put(&api.KVPair{Key: "k", Value: []byte("v")}, nil); err != nil {
		t.Fatal(err)
	}
	pid := s.PID()
	s.Kill()
	if s.PID() != 0 {
		t.Fatal("PID after Kill is not 0")
	}
	if _, _, err := c.KV().Get("k", nil); err == nil {
		t.Fatal("a killed server answered")
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if s.PID() == 0 || s.PID() == pid {
		t.Fatalf("PID after Restart = %d (was %d)", s.PID(), pid)
	}
	kv, _, err := c.KV().Get("k", &api.QueryOptions{RequireConsistent: true})
	if err != nil || kv != nil {
		t.Fatalf("after Restart: %v, %v; want no key", kv, err)
	}
}

// TestDurableRestart: a durable server comes back from a crash with its
// keys and its raft index.
func TestDurableRestart(t *testing.T) {
	s := consultest.Start(t, consultest.Durable())
	c := client(t, s)
	if _, err := c.KV().Put(&api.KVPair{Key: "k", Value: []byte("v")}, nil); err != nil {
		t.Fatal(err)
	}
	before, _, err := c.KV().Get("k", &api.QueryOptions{RequireConsistent: true})
	if err != nil || before == nil {
		t.Fatalf("get: %v, %v", before, err)
	}
	s.Kill()
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.KV().Put(&api.KVPair{Key: "k2", Value: []byte("v")}, nil); err != nil {
		t.Fatal(err)
	}
	kv, _, err := c.KV().Get("k2", &api.QueryOptions{RequireConsistent: true})
	if err != nil || kv == nil || kv.ModifyIndex <= before.ModifyIndex {
		t.Fatalf("after Restart: %v, %v; want k2 written at an index after %d", kv, err, before.ModifyIndex)
	}
	if kv, _, err := c.KV().Get("k", nil); err != nil || kv == nil || string(kv.Value) != "v" {
		t.Fatalf("k after Restart: %v, %v; want it kept", kv, err)
	}
}
