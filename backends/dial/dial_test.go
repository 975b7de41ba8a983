package dial_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/hustings/hustings/backends/dial"
)

func TestBadURLs(t *testing.T) {
	long := "redis://" + strings.Repeat("h", 70_000) + ":6379"
	tests := []struct{ url, names string }{
		{"", "empty: write memory"},
		{"mongodb://localhost:27017", `scheme "mongodb" is not one of memory, redis, etcd, zk, postgres, mysql, nats`},
		{"mysql://localhost:3306/db", "no user"},
		{"mysql://u@localhost:3306", "no database"},
		{"mysql://u@h:1,h:2/db", "one host:port only"},
		{"mysql://u@h:1/db?timeout=bogus", "not a MySQL URL"},
		{"foo://", `"foo://": scheme "foo"`},
		{"memory://x:1", "takes no host, path or options: write memory"},
		{"memory:/x", "takes no host, path or options: write memory"},
		{"memory?x", `"memory?x": no scheme`},
		{"MEMORY://h", "takes no host, path or options"},
		{"redis", `"redis": no scheme: write memory, or redis://, etcd:// or zk:// and host:port`},
		{"redis://", "no host:port"},
		{"REDIS://", "no host:port"},
		{"redis://localhost", `"localhost" is not host:port`},
		{"redis://localhost:99999", `port "99999"`},
		{"redis://localhost:0", `port "0"`},
		{"redis://localhost:6379/x", `database "x"`},
		{"redis://localhost:6379/-1", `database "-1"`},
		{"redis://a:1,b:2", "redis takes one host:port, not 2"},
		{"redis://u:secret@a:1", "user info is not supported"},
		{"redis://u:secret@a:1/%zz", `invalid URL escape "%zz"`},
		{"redis://a:1?db=2", "queries are not supported"},
		{"redis://a:1#x", "fragments are not supported"},
		{"postgres:///db", "no host:port"},
		{"postgres://h:1/db?sslmode=bogus", "not a PostgreSQL URL"},
		{long, "host name is 70000 bytes, longer than 253"},
		{"etcd://a:1,b", `invalid port ":1,b" after host`},
		{"etcd://a:1,b:99999", `port "99999" is not a number from 1 to 65535`},
		{"etcd://a:1,:2", `":2" has no host`},
		{"etcd://a:1/prefix", `etcd takes no path (got "/prefix")`},
		{"zk://:2181", `":2181" has no host`},
		{"zk:opaque", `no // after "zk:": write zk://host:port`},
		{"zk://h:1/zookeeper", `root "/zookeeper" is inside /zookeeper, which the server reserves`},
		{"zk://h:1/zookeeper/quota", `is inside /zookeeper`},
		{"zk://h:1/a//b", `has the segment ""`},
		{"zk://h:1/a/../b", `has the segment ".."`},
		{"%zz", `invalid URL escape "%zz"`},
		{"localhost:6379", `scheme "localhost" is not one of`},
		{"nats://h:1/a.b", `bucket "a.b": 1 to 64 letters`},
		{"nats://h:1/a/b", `bucket "a/b"`},
		{"nats://h", `"h" is not host:port`},
	}
	for _, tt := range tests {
		t.Run(tt.url[:min(len(tt.url), 40)], func(t *testing.T) {
			_, err := dial.Parse(tt.url)
			if !errors.Is(err, dial.ErrURL) || !strings.Contains(err.Error(), tt.names) {
				t.Fatalf("Parse(%.60q) = %v, want a bad-URL error naming %s", tt.url, err, tt.names)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Fatalf("error %q shows a password", err)
			}
			if len(err.Error()) > 400 {
				t.Fatalf("error of %d bytes: %.200s…", len(err.Error()), err)
			}
		})
	}
}

func TestParse(t *testing.T) {
	mem := dial.Target{Scheme: "memory"}
	tests := []struct {
		url  string
		want dial.Target
	}{
		{"memory", mem},
		{"MEMORY", mem},
		{"Memory", mem},
		{"memory://", mem},
		{"memory:", mem},
		{"MEMORY://", mem},
		{"redis://127.0.0.1:6379", dial.Target{Scheme: "redis", Hosts: []string{"127.0.0.1:6379"}}},
		{"REDIS://127.0.0.1:6379", dial.Target{Scheme: "redis", Hosts: []string{"127.0.0.1:6379"}}},
		{"redis://h:1/3", dial.Target{Scheme: "redis", Hosts: []string{"h:1"}, DB: 3}},
		{"etcd://a:1,b:2/", dial.Target{Scheme: "etcd", Hosts: []string{"a:1", "b:2"}}},
		{"Etcd://a:1", dial.Target{Scheme: "etcd", Hosts: []string{"a:1"}}},
		{"zk://[::1]:2181/svc/locks/", dial.Target{Scheme: "zk", Hosts: []string{"[::1]:2181"}, Root: "/svc/locks"}},
		{"ZK://h:1/", dial.Target{Scheme: "zk", Hosts: []string{"h:1"}}},
		{"zk://h:1/a%20b", dial.Target{Scheme: "zk", Hosts: []string{"h:1"}, Root: "/a b"}},
		{"postgres://u:pw@h:5432/db?sslmode=disable", dial.Target{Scheme: "postgres", Hosts: []string{"h:5432"}, DSN: "postgres://u:pw@h:5432/db?sslmode=disable"}},
		{"PostgreSQL://h:1/db", dial.Target{Scheme: "postgres", Hosts: []string{"h:1"}, DSN: "postgresql://h:1/db"}},
		{"nats://h:4222", dial.Target{Scheme: "nats", Hosts: []string{"h:4222"}}},
		{"NATS://a:1,b:2/locks_1", dial.Target{Scheme: "nats", Hosts: []string{"a:1", "b:2"}, Bucket: "locks_1"}},
		{"mysql://u:pw@h:3306/db?tls=false", dial.Target{Scheme: "mysql", Hosts: []string{"h:3306"}, DSN: "mysql://u:pw@h:3306/db?tls=false"}},
		{"MariaDB://u@h:1/db", dial.Target{Scheme: "mysql", Hosts: []string{"h:1"}, DSN: "mysql://u@h:1/db"}},
	}
	for _, tt := range tests {
		got, err := dial.Parse(tt.url)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", tt.url, got, err, tt.want)
		}
		if again, err := dial.Parse(got.String()); err != nil || !reflect.DeepEqual(again, got) {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", got.String(), again, err, got)
		}
	}
}

// FuzzParse: Parse never panics, every error matches ErrURL and is one
// short line, and what it accepts prints as a URL that parses to the same
// target.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"memory", "MEMORY", "memory://", "", "redis://h:1/2", "REDIS://h:1", "etcd://a:1,b:2",
		"zk://h:1/root", "zk://h:1,h:2/", "zk://h:1/zookeeper", "zk://h:1/a%3Fb", "%zz", "redis://[::1]:6379", "foo://", "postgres://u:p@h:1/db?sslmode=disable", "postgresql://h:1,h:2/db", "mysql://u:p@h:1/db",
		"redis://" + strings.Repeat("h", 300) + ":1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got, err := dial.Parse(raw)
		if err != nil {
			if !errors.Is(err, dial.ErrURL) {
				t.Fatalf("Parse(%q) = %v, not an ErrURL", raw, err)
			}
			if msg := err.Error(); strings.Contains(msg, "\n") || len(msg) > 600 {
				t.Fatalf("Parse(%q): error of %d bytes or several lines: %q", raw, len(msg), msg)
			}
			return
		}
		again, err := dial.Parse(got.String())
		if err != nil || !reflect.DeepEqual(again, got) {
			t.Fatalf("Parse(%q) = %+v; its String %q parses to %+v, %v", raw, got, got.String(), again, err)
		}
	})
}
