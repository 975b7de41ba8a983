package zookeeper_test

import (
	"context"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/backendtest"
	"github.com/hustings/hustings/backends/zookeeper"
	"github.com/hustings/hustings/events"
)

// harness is the contract suite's harness: a real server, every check
// with a Backend of its own on one shared conn, and the registry checks.
func harness(t *testing.T) backendtest.Harness {
	const timeout = 4 * time.Second
	conn := dial(t, server(t).Addr(), timeout)
	return backendtest.Harness{
		New:    func(t *testing.T) backends.Backend { return newBackend(t, conn, timeout) },
		TTL:    2 * time.Second, // room for a loaded machine between renewals
		Delete: func(t *testing.T, _ backends.Backend, name string) { deleteHolder(t, conn, name) },
		Fence:  fencedCreate(t, conn),
	}
}

// fencedCreate returns the contract suite's fenced write: a Multi of the
// fence and the creation of a sequential node under a data node of the
// test's own.
func fencedCreate(t *testing.T, conn *zk.Conn) func(context.Context, backends.Backend, string, events.Token) error {
	data := root(t) + "-writes"
	createAll(t, conn, data)
	return func(ctx context.Context, b backends.Backend, name string, token events.Token) error {
		write := &zk.CreateRequest{Path: data + "/w-", Data: []byte(name), Acl: zk.WorldACL(zk.PermAll), Flags: zk.FlagSequence}
		_, err := b.(*zookeeper.Backend).Fence(ctx, name, token, write)
		return err
	}
}

// TestContract runs the contract suite against a real server.
func TestContract(t *testing.T) { backendtest.Run(t, harness(t)) }

// TestGroups runs the group scenario: 8 candidates on 3 slots, ranked by
// FIFO through the registry, with crashes and resignations.
func TestGroups(t *testing.T) {
	backendtest.RunGroups(t, harness(t))
}

// deleteHolder deletes the holder's node of the lock name (under the
// test's root), as an operator would: the oldest child of
// root/locks/<name>, by sequence number.
func deleteHolder(t *testing.T, conn *zk.Conn, name string) {
	t.Helper()
	parent := root(t) + "/locks/" + url.PathEscape(name)
	kids, _, err := conn.Children(parent)
	if err != nil {
		t.Fatalf("children of %s: %v", parent, err)
	}
	kids = slices.DeleteFunc(kids, func(k string) bool { return !strings.Contains(k, "-") }) // the hold marker
	if len(kids) == 0 {
		t.Fatalf("lock %q has no node to delete", name)
	}
	seq := func(k string) string { _, s, _ := strings.Cut(k, "-"); return s }
	oldest := slices.MinFunc(kids, func(a, b string) int { return strings.Compare(seq(a), seq(b)) })
	if err := conn.Delete(parent+"/"+oldest, -1); err != nil {
		t.Fatalf("delete %s/%s: %v", parent, oldest, err)
	}
}

// TestStorm starts a storm of campaigns on one shared session at once
// against a real server (see backendtest.RunStorm).
func TestStorm(t *testing.T) {
	backendtest.RunStorm(t, harness(t), 0)
}
