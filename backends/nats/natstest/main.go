package natstest

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/goleak"
)

// Connect dials the server (or a link to one) at url with the options the
// tests want of a client that must ride out faults: it retries the first
// connection and reconnects forever, every 100 ms; it pings every second
// and counts the connection dead after two unanswered pings, so a
// blackholed link is noticed within about 3 s. The caller closes it.
func Connect(url string, opts ...nats.Option) (*nats.Conn, error) {
	base := []nats.Option{
		nats.Timeout(2 * time.Second),
		nats.RetryOnFailedConnect(true),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(100 * time.Millisecond),
		nats.ReconnectJitter(50*time.Millisecond, 50*time.Millisecond),
		nats.PingInterval(time.Second),
		nats.MaxPingsOutstanding(2),
		// The driver logs nothing by default; say nothing of the faults
		// the tests make either.
		nats.NoCallbacksAfterClientClose(),
	}
	nc, err := nats.Connect(url, append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("natstest: connect %s: %w", url, err)
	}
	return nc, nil
}

// Conn is Connect for t: it fails the test if the dial fails, and closes
// the connection when the test ends.
func Conn(t testing.TB, url string, opts ...nats.Option) *nats.Conn {
	t.Helper()
	nc, err := Connect(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// Main runs the tests of a package that share one server: it starts the
// server and stores it in *srv, runs m, stops the server and, if the
// tests passed, fails the run if a goroutine is left (goleak.Find with
// opts). It returns the exit code, for
//
//	func TestMain(m *testing.M) { os.Exit(natstest.Main(m, &srv)) }
//
// If the server does not start, it prints why and returns 1 without
// running the tests.
func Main(m *testing.M, srv **Server, opts ...goleak.Option) int {
	s, err := StartServer()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	*srv = s
	code := m.Run()
	s.Stop()
	if code == 0 {
		if err := goleak.Find(opts...); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	return code
}
