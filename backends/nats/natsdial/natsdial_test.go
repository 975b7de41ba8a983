package natsdial_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/hustings/hustings/backends/dial"
	"github.com/hustings/hustings/backends/dial/dialtest"
	_ "github.com/hustings/hustings/backends/nats/natsdial"
	"github.com/hustings/hustings/backends/nats/natstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestBadNATSURLs(t *testing.T) {
	dialtest.CheckBad(t, map[string]string{
		"nats://h:1/a.b":      `bucket "a.b": 1 to 64 letters`,
		"nats://h:1/a/b":      `bucket "a/b"`,
		"nats://h":            `"h" is not host:port`,
		"nats://u:secret@h:1": "user info is not supported",
		"nats://h:1#f":        "fragments are not supported",
	})
}

func TestParseNATS(t *testing.T) {
	dialtest.CheckParse(t, map[string]dial.Target{
		"nats://h:4222":          {Scheme: "nats", Hosts: []string{"h:4222"}},
		"NATS://a:1,b:2/locks_1": {Scheme: "nats", Hosts: []string{"a:1", "b:2"}, Bucket: "locks_1"},
	})
}

func TestOpenNATS(t *testing.T) {
	ns := natstest.Start(t)
	for _, url := range []string{ns.URL(), ns.URL() + "/dial_test"} {
		t.Run(url, func(t *testing.T) { dialtest.Elect(t, url) })
	}
}
