package zookeeper_test

import (
	"testing"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/backendtest"
)

// harness is the contract suite's harness: a real server, every check
// with a Backend of its own on one shared conn, and the registry checks.
func harness(t *testing.T) backendtest.Harness {
	const timeout = 4 * time.Second
	conn := dial(t, server(t).Addr(), timeout)
	return backendtest.Harness{
		New:      func(t *testing.T) backends.Backend { return newBackend(t, conn, timeout) },
		TTL:      2 * time.Second, // room for a loaded machine between renewals
		Registry: true,
	}
}

// TestContract runs the contract suite against a real server.
func TestContract(t *testing.T) { backendtest.Run(t, harness(t)) }

// TestGroups runs the group scenario: 8 candidates on 3 slots, ranked by
// FIFO through the registry, with crashes and resignations.
func TestGroups(t *testing.T) {
	backendtest.RunGroups(t, harness(t))
}
