package dial_test

import (
	"errors"
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
