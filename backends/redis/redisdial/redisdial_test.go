package redisdial_test

import (
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/hustings/hustings/backends/dial"
	"github.com/hustings/hustings/backends/dial/dialtest"
	_ "github.com/hustings/hustings/backends/redis/redisdial"
	"github.com/hustings/hustings/backends/redis/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestBadRedisURLs(t *testing.T) {
	dialtest.CheckBad(t, map[string]string{
		"redis://":                  "no host:port",
		"REDIS://":                  "no host:port",
		"redis://localhost":         `"localhost" is not host:port`,
		"redis://localhost:99999":   `port "99999"`,
		"redis://localhost:0":       `port "0"`,
		"redis://localhost:6379/x":  `database "x"`,
		"redis://localhost:6379/-1": `database "-1"`,
		"redis://a:1,b:2":           "redis takes one host:port, not 2",
		"redis://u:secret@a:1":      "user info is not supported",
		"redis://u:secret@a:1/%zz":  `invalid URL escape "%zz"`,
		"redis://a:1?db=2":          "queries are not supported",
		"redis://a:1#x":             "fragments are not supported",
		"redis:opaque":              `no // after "redis:": write redis://host:port`,
		"redis://" + strings.Repeat("h", 70_000) + ":6379": "host name is 70000 bytes, longer than 253",
		"redis://h:1/" + strings.Repeat("9", 1000):         "database",
	})
}

func TestParseRedis(t *testing.T) {
	dialtest.CheckParse(t, map[string]dial.Target{
		"redis://127.0.0.1:6379": {Scheme: "redis", Hosts: []string{"127.0.0.1:6379"}},
		"REDIS://127.0.0.1:6379": {Scheme: "redis", Hosts: []string{"127.0.0.1:6379"}},
		"redis://h:1/3":          {Scheme: "redis", Hosts: []string{"h:1"}, DB: 3},
		"redis://[::1]:6379/":    {Scheme: "redis", Hosts: []string{"[::1]:6379"}},
	})
}

func TestUsageNamesRedis(t *testing.T) {
	if u := dial.Usage(); !strings.Contains(u, "redis://host:port[/db]") {
		t.Fatalf("Usage() = %q, want redis://host:port[/db] in it", u)
	}
}

func TestOpenRedis(t *testing.T) {
	rs := redistest.Start(t)
	for _, url := range []string{"redis://" + rs.Addr(), "redis://" + rs.Addr() + "/1"} {
		t.Run(url, func(t *testing.T) { dialtest.Elect(t, url) })
	}
}
