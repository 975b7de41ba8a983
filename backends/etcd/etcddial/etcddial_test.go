package etcddial_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hustings/hustings/backends/dial"
	"github.com/hustings/hustings/backends/dial/dialtest"
	_ "github.com/hustings/hustings/backends/etcd/etcddial"
	"github.com/hustings/hustings/backends/etcd/etcdtest"
	"github.com/hustings/hustings/internal/testserver"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestBadEtcdURLs(t *testing.T) {
	dialtest.CheckBad(t, map[string]string{
		"etcd://":             "no host:port",
		"etcd://a:1,b":        `invalid port ":1,b" after host`,
		"etcd://a:1,b:99999":  `port "99999" is not a number from 1 to 65535`,
		"etcd://a:1,:2":       `":2" has no host`,
		"etcd://a:1/prefix":   `etcd takes no path (got "/prefix")`,
		"etcd://u:secret@a:1": "user info is not supported",
		"etcd://a:1?x=1":      "queries are not supported",
	})
}

func TestParseEtcd(t *testing.T) {
	dialtest.CheckParse(t, map[string]dial.Target{
		"etcd://a:1,b:2/": {Scheme: "etcd", Hosts: []string{"a:1", "b:2"}},
		"Etcd://a:1":      {Scheme: "etcd", Hosts: []string{"a:1"}},
	})
}

func TestOpenEtcd(t *testing.T) {
	dialtest.Elect(t, "etcd://"+etcdtest.Start(t).Addr())
}

// TestEtcdOutlivesOpenContext: the client Open made keeps working after
// Open's ctx was cancelled.
func TestEtcdOutlivesOpenContext(t *testing.T) {
	es := etcdtest.Start(t)
	ctx, cancel := context.WithCancel(t.Context())
	b, closeBackend, err := dial.Open(ctx, "etcd://"+es.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer closeBackend()
	cancel()
	s, err := b.Open(t.Context(), "after-cancel", 2*time.Second)
	if err != nil {
		t.Fatalf("Open of a session after Open's ctx ended: %v", err)
	}
	defer s.Close(t.Context())
	if _, err := s.Acquire(t.Context(), "dial-after-cancel", 0); err != nil {
		t.Fatalf("Acquire after Open's ctx ended: %v", err)
	}
}

// TestOpenEtcdNeedsAServer: with nothing listening, Open of etcd fails
// (the client connects lazily: Open must make a request).
func TestOpenEtcdNeedsAServer(t *testing.T) {
	port, err := testserver.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = dial.Open(t.Context(), fmt.Sprintf("etcd://127.0.0.1:%d", port), dial.WithTimeout(500*time.Millisecond))
	if !errors.Is(err, dial.ErrUnreachable) || !strings.Contains(err.Error(), "within 500ms") {
		t.Fatalf("Open with nothing listening = %v, want ErrUnreachable within 500ms", err)
	}
}
