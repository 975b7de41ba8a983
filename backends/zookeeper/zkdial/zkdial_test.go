package zkdial_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/hustings/hustings/backends/dial"
	"github.com/hustings/hustings/backends/dial/dialtest"
	_ "github.com/hustings/hustings/backends/zookeeper/zkdial"
	"github.com/hustings/hustings/backends/zookeeper/zktest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestBadZooKeeperURLs(t *testing.T) {
	dialtest.CheckBad(t, map[string]string{
		"zk://:2181":               `":2181" has no host`,
		"zk:opaque":                `no // after "zk:": write zk://host:port`,
		"zk://h:1/zookeeper":       `root "/zookeeper" is inside /zookeeper, which the server reserves`,
		"zk://h:1/zookeeper/quota": `is inside /zookeeper`,
		"zk://h:1/a//b":            `has the segment ""`,
		"zk://h:1/a/../b":          `has the segment ".."`,
		"zk://u:secret@h:1":        "user info is not supported",
	})
}

func TestParseZooKeeper(t *testing.T) {
	dialtest.CheckParse(t, map[string]dial.Target{
		"zk://[::1]:2181/svc/locks/": {Scheme: "zk", Hosts: []string{"[::1]:2181"}, Root: "/svc/locks"},
		"ZK://h:1/":                  {Scheme: "zk", Hosts: []string{"h:1"}},
		"zk://h:1/a%20b":             {Scheme: "zk", Hosts: []string{"h:1"}, Root: "/a b"},
		"zk://h:1,h:2":               {Scheme: "zk", Hosts: []string{"h:1", "h:2"}},
	})
}

func TestOpenZooKeeper(t *testing.T) {
	dialtest.Elect(t, "zk://"+zktest.Start(t).Addr()+"/dial-test")
}
