package dial_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hustings/hustings/backends/backendtest"
	"github.com/hustings/hustings/backends/dial"
	"github.com/hustings/hustings/backends/etcd/etcdtest"
	"github.com/hustings/hustings/backends/redis/redistest"
	"github.com/hustings/hustings/backends/zookeeper/zktest"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
)

func TestBadURLs(t *testing.T) {
	tests := []struct{ url, names string }{
		{"mysql://localhost:3306", `scheme "mysql"`},
		{"redis://", "no host:port"},
		{"redis://localhost", `"localhost" is not host:port`},
		{"redis://localhost:99999", `port "99999"`},
		{"redis://localhost:0", `port "0"`},
		{"redis://localhost:6379/x", `database "x"`},
		{"redis://localhost:6379/-1", `database "-1"`},
		{"redis://a:1,b:2", "one host:port"},
		{"redis://u:secret@a:1", "user info"},
		{"redis://a:1?db=2", "queries"},
		{"etcd://a:1,b", "invalid port"},
		{"etcd://a:1,:2", `":2" is not host:port`},
		{"etcd://a:1/prefix", "etcd takes no path"},
		{"zk://:2181", `":2181" is not host:port`},
		{"zk:opaque", "not supported"},
		{"%zz", "bad backend URL"},
		{"localhost:6379", `scheme "localhost"`},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			_, err := dial.Parse(tt.url)
			if !errors.Is(err, dial.ErrURL) || !strings.Contains(err.Error(), tt.names) {
				t.Fatalf("Parse(%q) = %v, want a bad-URL error naming %s", tt.url, err, tt.names)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Fatalf("error %q shows a password", err)
			}
		})
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		url  string
		want dial.Target
	}{
		{"", dial.Target{Scheme: "memory"}},
		{"memory", dial.Target{Scheme: "memory"}},
		{"redis://127.0.0.1:6379", dial.Target{Scheme: "redis", Hosts: []string{"127.0.0.1:6379"}}},
		{"redis://h:1/3", dial.Target{Scheme: "redis", Hosts: []string{"h:1"}, DB: 3}},
		{"etcd://a:1,b:2/", dial.Target{Scheme: "etcd", Hosts: []string{"a:1", "b:2"}}},
		{"zk://[::1]:2181/svc/locks/", dial.Target{Scheme: "zk", Hosts: []string{"[::1]:2181"}, Root: "/svc/locks"}},
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

// FuzzParse: Parse never panics, every error matches ErrURL, and what it
// accepts prints as a URL that parses to the same target.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"memory", "redis://h:1/2", "etcd://a:1,b:2", "zk://h:1/root", "zk://h:1,h:2/", "%zz", "redis://[::1]:6379"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got, err := dial.Parse(raw)
		if err != nil {
			if !errors.Is(err, dial.ErrURL) {
				t.Fatalf("Parse(%q) = %v, not an ErrURL", raw, err)
			}
			return
		}
		again, err := dial.Parse(got.String())
		if err != nil || !reflect.DeepEqual(again, got) {
			t.Fatalf("Parse(%q) = %+v; its String %q parses to %+v, %v", raw, got, got.String(), again, err)
		}
	})
}

// elect runs one campaign on the backend at url until it is elected.
func elect(t *testing.T, url string) {
	t.Helper()
	b, closeBackend, err := dial.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer closeBackend()
	r := backendtest.Record(t, b, "dial-test", "dial", campaign.WithTTL(2*time.Second))
	defer r.Stop()
	r.Expect(t, events.Elected, 30*time.Second)
}

func TestOpen(t *testing.T) {
	rs := redistest.Start(t)
	es := etcdtest.Start(t)
	zs := zktest.Start(t)
	for _, url := range []string{"memory", "redis://" + rs.Addr() + "/1", "etcd://" + es.Addr(), "zk://" + zs.Addr() + "/dial-test"} {
		t.Run(url, func(t *testing.T) { elect(t, url) })
	}
}

func TestOpenUnreachable(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	if _, _, err := dial.Open(ctx, "redis://127.0.0.1:1"); err == nil || errors.Is(err, dial.ErrURL) {
		t.Fatalf("Open of a closed port = %v, want a connection error", err)
	}
}
