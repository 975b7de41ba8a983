package zookeeper_test

import (
	"testing"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/backendtest"
)

// TestContract runs the contract suite against a real server, every check
// with a Backend of its own on one shared conn.
func TestContract(t *testing.T) {
	const timeout = 4 * time.Second
	conn := dial(t, server(t).Addr(), timeout)
	backendtest.Run(t, backendtest.Harness{
		New: func(t *testing.T) backends.Backend { return newBackend(t, conn, timeout) },
		TTL: 2 * time.Second, // room for a loaded machine between renewals
	})
}
