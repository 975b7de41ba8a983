package faultlink

import (
	"bufio"
	"net"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// echo serves one line back per line, until the listener closes.
func echo(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(c net.Conn, timeout time.Duration) error {
	if err := c.SetDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return err
	}
	_, err := bufio.NewReader(c).ReadString('\n')
	return err
}

func TestBlackholeAndHeal(t *testing.T) {
	l := NewLink(t, echo(t))
	c, err := net.Dial("tcp", l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := roundTrip(c, 5*time.Second); err != nil {
		t.Fatalf("healthy link: %v", err)
	}
	l.Blackhole()
	if err := roundTrip(c, 300*time.Millisecond); err == nil {
		t.Fatal("round trip went through a blackholed link")
	}
	l.Heal()
	c2, err := net.Dial("tcp", l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if err := roundTrip(c2, 5*time.Second); err != nil {
		t.Fatalf("healed link: %v", err)
	}
}

func TestLatency(t *testing.T) {
	l := NewLink(t, echo(t))
	c, err := net.Dial("tcp", l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	l.Latency(100*time.Millisecond, 0)
	start := time.Now()
	if err := roundTrip(c, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 100*time.Millisecond {
		t.Fatalf("round trip took %v with 100ms latency added", took)
	}
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, KnownLeaks()...) }

// TestCloseWithFaultsOn: closing a link with faults on leaves nothing
// running (goleak checks at the end).
func TestCloseWithFaultsOn(t *testing.T) {
	for _, fault := range []func(*Link){(*Link).Blackhole, (*Link).Reset, func(l *Link) { l.Latency(50*time.Millisecond, 0) }} {
		l := NewLink(t, echo(t))
		c, err := net.Dial("tcp", l.Addr())
		if err != nil {
			t.Fatal(err)
		}
		fault(l)
		if err := c.SetDeadline(time.Now().Add(200 * time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		// The fault decides whether the write and the read go through
		// (with latency alone they may); only what Close leaves matters.
		_, _ = c.Write([]byte("ping\n"))
		_, _ = c.Read(make([]byte, 8))
		l.Close()
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	}
}
