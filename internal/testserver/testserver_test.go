package testserver

import (
	"errors"
	"net"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestStartWaitKill(t *testing.T) {
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	// A throwaway listener: python3 is on every machine of this kind.
	p, err := Start(t.TempDir(), "python3", "-c",
		"import socket,time; s=socket.socket(); s.bind(('127.0.0.1',"+strconv.Itoa(port)+")); s.listen(); time.sleep(60)")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if err := p.WaitFor(10*time.Second, func() error {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	p.Kill()
	p.Kill()
	if !p.Exited() {
		t.Fatal("process alive after Kill")
	}
	if err := p.WaitFor(time.Second, func() error { return errors.New("never") }); err == nil {
		t.Fatal("WaitFor succeeded on an exited process")
	}
}

// listener is a python3 program that listens on the port in argv[1] and,
// with a child of its own in its process group, sleeps.
const listener = `import os,socket,sys,time
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1',int(sys.argv[1]))); s.listen()
if os.fork() == 0: time.sleep(60)
time.sleep(60)`

func TestServerLifecycle(t *testing.T) {
	dir := t.TempDir() + "/srv"
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var port int
	addr := func() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }
	s := NewServer(Spec{
		Kit: "kit", Dir: dir, Bin: "python3",
		Args:  func(string) []string { return []string{"-c", listener, strconv.Itoa(port)} },
		Ready: func() error { return dial(addr()) },
		Addr:  addr, Shutdown: syscall.SIGTERM, RemoveDir: true,
	})
	if err := s.StartOn(&port); err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	first := s.PID()
	if first == 0 || !s.Running() {
		t.Fatalf("PID %d, Running %v after Start", first, s.Running())
	}
	if err := s.Pause(); err != nil {
		t.Fatal(err)
	}
	if err := s.Resume(); err != nil {
		t.Fatal(err)
	}
	s.Kill()
	if s.PID() != 0 || s.Running() {
		t.Fatal("server runs after Kill")
	}
	if err := syscall.Kill(-first, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("process group %d outlived Kill: %v", first, err)
	}
	if err := s.Pause(); err == nil {
		t.Fatal("Pause of a killed server succeeded")
	}
	s.Kill()
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if pid := s.PID(); pid == 0 || pid == first {
		t.Fatalf("PID %d after Restart (first %d)", pid, first)
	}
	if err := dial(addr()); err != nil {
		t.Fatalf("not on the same port after Restart: %v", err)
	}
	s.Stop()
	s.Stop()
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Stop left the directory: %v", err)
	}
	if err := s.Restart(); err == nil {
		t.Fatal("Restart of a stopped server succeeded")
	}
}

func TestServerNotReady(t *testing.T) {
	s := NewServer(Spec{
		Kit: "kit", Dir: t.TempDir(), Bin: "python3",
		Args:         func(string) []string { return []string{"-c", "import time; time.sleep(60)"} },
		Ready:        func() error { return errors.New("never") },
		ReadyTimeout: 300 * time.Millisecond,
	})
	if err := s.Start(); err == nil {
		t.Fatal("Start succeeded with a probe that never passes")
	}
	if s.Running() {
		t.Fatal("a server that never got ready still runs")
	}
}

func dial(addr string) error {
	c, err := net.Dial("tcp", addr)
	if err == nil {
		c.Close()
	}
	return err
}

// TestFreePortOutsideEphemeralRange: a port FreePort returns is never one
// the kernel hands an outgoing connection (its ephemeral range), so a
// server restarted on its port cannot find it taken by a client socket
// of another test (Consul's restart failed so in CI: "bind: address
// already in use" on its serf port).
func TestFreePortOutsideEphemeralRange(t *testing.T) {
	low, high, err := ephemeralRange()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for range 200 {
		p, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if p >= low && p <= high {
			t.Fatalf("FreePort = %d, in the ephemeral range %d-%d", p, low, high)
		}
		seen[p] = true
	}
	if len(seen) < 150 {
		t.Errorf("FreePort gave %d ports in 200 calls: too few to keep parallel tests apart", len(seen))
	}
}
