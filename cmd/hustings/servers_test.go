package main

import (
	"net/url"
	"testing"
	"time"

	"github.com/hustings/hustings/backends/consul/consultest"
	"github.com/hustings/hustings/backends/dial"
	"github.com/hustings/hustings/backends/dynamodb/dynamotest"
	"github.com/hustings/hustings/backends/etcd/etcdtest"
	"github.com/hustings/hustings/backends/kubernetes/kubetest"
	"github.com/hustings/hustings/backends/mongodb/mongotest"
	"github.com/hustings/hustings/backends/mysql/mysqltest"
	"github.com/hustings/hustings/backends/nats/natstest"
	"github.com/hustings/hustings/backends/postgres/pgtest"
	"github.com/hustings/hustings/backends/redis/redistest"
	"github.com/hustings/hustings/backends/zookeeper/zktest"
)

// onServer runs who, list and watch against the
// real server at raw, whose candidates the test runs through a backend of
// its own opened by URL.
func onServer(t *testing.T, raw string) {
	b, closeStore, err := dial.Open(t.Context(), raw, dial.WithTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer closeStore()
	t.Run("who", func(t *testing.T) { whoShowsHolder(t, nil, b, raw) })
	t.Run("list", func(t *testing.T) { listLists(t, nil, b, raw) })
	t.Run("watch", func(t *testing.T) { watchSeesTakeOver(t, nil, b, raw) })
}

func TestRedis(t *testing.T) { onServer(t, "redis://"+redistest.Start(t).Addr()) }

func TestPostgres(t *testing.T) { onServer(t, pgtest.DSN(pgtest.Start(t).Addr())) }

func TestEtcd(t *testing.T) { onServer(t, "etcd://"+etcdtest.Start(t).Addr()) }

func TestZooKeeper(t *testing.T) { onServer(t, "zk://"+zktest.Start(t).Addr()+"/cli-test") }

func TestMySQL(t *testing.T) {
	onServer(t, "mysql://root@"+mysqltest.Start(t).Addr()+"/"+mysqltest.Database)
}

func TestNATS(t *testing.T) { onServer(t, natstest.Start(t).URL()) }

func TestKubernetes(t *testing.T) {
	srv := kubetest.Start(t)
	onServer(t, "k8s:///?"+url.Values{"kubeconfig": {srv.Kubeconfig()}, "namespace": {"default"}, "prefix": {"clitest"}, "qps": {"-1"}}.Encode())
}

func TestConsul(t *testing.T) { onServer(t, "consul://"+consultest.Start(t).Addr()) }

func TestMongoDB(t *testing.T) { onServer(t, mongotest.Start(t).URI()) }

func TestDynamoDB(t *testing.T) {
	srv := dynamotest.Start(t)
	onServer(t, "dynamodb://"+dynamotest.AccessKey+":"+dynamotest.SecretKey+"@"+srv.Addr()+"?region="+dynamotest.Region)
}
