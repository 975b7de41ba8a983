package testserver

import (
	"errors"
	"net"
	"strconv"
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
