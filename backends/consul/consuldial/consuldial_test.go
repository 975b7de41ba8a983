package consuldial_test

import (
	"testing"

	"go.uber.org/goleak"

	_ "github.com/hustings/hustings/backends/consul/consuldial"
	"github.com/hustings/hustings/backends/consul/consultest"
	"github.com/hustings/hustings/backends/dial"
	"github.com/hustings/hustings/backends/dial/dialtest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// The idle connections of the tests' clients, which have no Close.
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"))
}

func TestBadConsulURLs(t *testing.T) {
	dialtest.CheckBad(t, map[string]string{
		"consul://h":            `"h" is not host:port`,
		"consul://a:1,b:2":      "one host:port only",
		"consul://h:1/a//b":     `prefix "a//b"`,
		"consul://u:secret@h:1": "user info is not supported",
		"consul://h:1#f":        "fragments are not supported",
		"consul://h:1?x=y":      "queries are not supported",
	})
}

func TestParseConsul(t *testing.T) {
	dialtest.CheckParse(t, map[string]dial.Target{
		"consul://h:8500":          {Scheme: "consul", Hosts: []string{"h:8500"}},
		"CONSUL://h:1/apps/locks/": {Scheme: "consul", Hosts: []string{"h:1"}, Root: "apps/locks/"},
	})
}

func TestOpenConsul(t *testing.T) {
	srv := consultest.Start(t)
	for _, url := range []string{"consul://" + srv.Addr(), "consul://" + srv.Addr() + "/dial/test"} {
		t.Run(url, func(t *testing.T) { dialtest.Elect(t, url) })
	}
}
