package dial_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// clients are the module paths of the store clients, by store.
var clients = map[string]string{
	"etcd":       "go.etcd.io/etcd/client/v3",
	"ZooKeeper":  "github.com/go-zookeeper/zk",
	"PostgreSQL": "github.com/jackc/pgx/v5",
	"MySQL":      "github.com/go-sql-driver/mysql",
	"NATS":       "github.com/nats-io/nats.go",
	"Kubernetes": "k8s.io/client-go",
	"Redis":      "github.com/redis/go-redis/v9",
}

// modules lists the modules of the packages that pkgs link (go list
// -deps), without the standard library's.
func modules(t *testing.T, pkgs ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}"}, pkgs...)...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %v: %v", pkgs, err)
	}
	ms := strings.Fields(string(out))
	slices.Sort(ms)
	return slices.Compact(ms)
}

// TestDialLinksNoStoreClient: package dial links no store's client, so a
// program pays only for the openers it imports.
func TestDialLinksNoStoreClient(t *testing.T) {
	ms := modules(t, ".")
	for store, m := range clients {
		if slices.Contains(ms, m) {
			t.Errorf("package dial links %s, the %s client", m, store)
		}
	}
	t.Logf("package dial links the modules %v", ms)
}

// TestDepsOfOneOpener: a program that imports dial and the Redis opener
// (testdata/redisonly.go) links go-redis and no other store's client.
func TestDepsOfOneOpener(t *testing.T) {
	ms := modules(t, "testdata/redisonly.go")
	for store, m := range clients {
		if linked := slices.Contains(ms, m); linked != (store == "Redis") {
			t.Errorf("a program with dial and redisdial: links %s (the %s client) = %v", m, store, linked)
		}
	}
	t.Logf("dial and redisdial link the modules %v", ms)
}

// TestAllLinksEveryClient: package all links every store's client, which
// shows that the checks above would see them.
func TestAllLinksEveryClient(t *testing.T) {
	ms := modules(t, "./all")
	for store, m := range clients {
		if !slices.Contains(ms, m) {
			t.Errorf("package all does not link %s, the %s client", m, store)
		}
	}
}
