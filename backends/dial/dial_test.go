package dial_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/dial"
	"github.com/hustings/hustings/backends/dial/dialtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The tests of this package import no opener: every scheme but memory is
// unknown, or registered by the tests themselves.

func TestBadURLs(t *testing.T) {
	dialtest.CheckBad(t, map[string]string{
		"":                           "empty: write memory",
		"cassandra://localhost:9042": `scheme "cassandra" is not one of memory`,
		"foo://":                     `"foo://": scheme "foo"`,
		"memory://x:1":               "takes no host, path or options: write memory",
		"memory:/x":                  "takes no host, path or options: write memory",
		"memory?x":                   `"memory?x": no scheme: write memory`,
		"MEMORY://h":                 "takes no host, path or options",
		"redis":                      `"redis": no scheme: write memory`,
		"%zz":                        `invalid URL escape "%zz"`,
		"localhost:6379":             `scheme "localhost" is not one of`,
		"redis://h:1":                `scheme "redis" is not registered: import _ "github.com/hustings/hustings/backends/redis/redisdial"`,
		"PostgreSQL://h:1/db":        `scheme "postgresql" is not registered: import _ "github.com/hustings/hustings/backends/postgres/pgdial"`,
		"k8s://":                     `backends/kubernetes/k8sdial"`,
		"foo://u:secret@h:1":         `"foo://…@h:1"`,
	})
}

func TestParseMemory(t *testing.T) {
	mem := dial.Target{Scheme: "memory"}
	dialtest.CheckParse(t, map[string]dial.Target{
		"memory": mem, "MEMORY": mem, "Memory": mem, "memory://": mem, "memory:": mem, "MEMORY://": mem,
	})
}

func TestBadTimeout(t *testing.T) {
	if _, _, err := dial.Open(t.Context(), "memory", dial.WithTimeout(0)); !errors.Is(err, backends.ErrInvalid) {
		t.Fatalf("Open with a zero timeout = %v, want ErrInvalid", err)
	}
}

func TestOpenMemory(t *testing.T) {
	dialtest.Elect(t, "memory")
}

func TestHosts(t *testing.T) {
	for list, want := range map[string]string{
		"":                              "no host:port",
		"h":                             `"h" is not host:port`,
		"h:1,:2":                        `":2" has no host`,
		"h:0":                           `port "0"`,
		strings.Repeat("h", 254) + ":1": "host name is 254 bytes, longer than 253",
		"[::1]:65536":                   `port "65536"`,
	} {
		if _, err := dial.Hosts(list); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Hosts(%.40q) = %v, want an error naming %s", list, err, want)
		}
	}
	if hs, err := dial.Hosts("a:1,[::1]:2"); err != nil || len(hs) != 2 || hs[1] != "[::1]:2" {
		t.Errorf("Hosts(a:1,[::1]:2) = %q, %v", hs, err)
	}
}

// TestDialerKeepsTheCause: a dial cut off by its context (the client
// giving up, or its own shutdown) says nothing about the server, so the
// Dialer keeps the earlier dial's cause (a refused connection) for
// Unreachable; a success clears it.
func TestDialerKeepsTheCause(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nobody listens: dials are refused
	d := &dial.Dialer{}
	if _, err := d.DialContext(t.Context(), "tcp", addr); err == nil {
		t.Fatal("dial of a closed port succeeded")
	}
	refused := d.LastErr()
	if refused == nil || !strings.Contains(refused.Error(), "connection refused") {
		t.Fatalf("LastErr after a refused dial = %v", refused)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := d.DialContext(ctx, "tcp", addr); err == nil {
		t.Fatal("dial with an ended context succeeded")
	}
	if got := d.LastErr(); got != refused {
		t.Errorf("LastErr after a canceled dial = %v, want the refused dial's %v", got, refused)
	}
	ln, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := d.DialContext(t.Context(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if got := d.LastErr(); got != nil {
		t.Errorf("LastErr after a dial that succeeded = %v, want nil", got)
	}
}
