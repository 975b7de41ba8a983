package zktest_test

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"

	"github.com/hustings/hustings/backends/zookeeper/zktest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestRestartKeepsData: a restarted server serves on the same address with
// the data it had; mntr counts requests.
func TestRestartKeepsData(t *testing.T) {
	srv := zktest.Start(t)
	conn, err := srv.Connect(2 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Create("/kept", []byte("v"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	m, err := srv.Mntr()
	if err != nil || m["zk_packets_received"] == 0 {
		t.Fatalf("mntr: %v, %v", m, err)
	}
	srv.Stop()
	srv.Stop()
	if _, err := srv.Mntr(); err == nil {
		t.Fatal("mntr answered by a stopped server")
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := zktest.WaitSession(conn, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	data, _, err := conn.Get("/kept")
	if err != nil || string(data) != "v" {
		t.Fatalf("Get after the restart: %q, %v", data, err)
	}
}
