package memberlist_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hustings/hustings/strategy"
	"github.com/hustings/hustings/transport/memberlist"
)

// fast are timings for loopback tests: changes spread in tens of
// milliseconds. The probe interval is left wide enough that a slow test
// machine (-race) does not make the failure detector suspect live nodes.
var fast = []memberlist.Option{
	memberlist.WithGossipInterval(20 * time.Millisecond),
	memberlist.WithProbeInterval(200 * time.Millisecond),
	memberlist.WithPushPullInterval(500 * time.Millisecond),
	memberlist.WithTCPTimeout(2 * time.Second),
	memberlist.WithBroadcastTimeout(500 * time.Millisecond),
}

// patience bounds every wait for gossip to reach a state; tests never
// assert that gossip is fast, only that it gets there.
const patience = 10 * time.Second

// newNode returns a node with the fast timings, closed at the end of the
// test.
func newNode(t *testing.T, id string, opts ...memberlist.Option) *memberlist.Node {
	t.Helper()
	n, err := memberlist.New(id, append(slices.Clone(fast), opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Errorf("Close %s: %v", id, err)
		}
	})
	return n
}

// cluster starts one node per ID, in order, each joining the first.
func cluster(t *testing.T, ids ...string) []*memberlist.Node {
	t.Helper()
	var nodes []*memberlist.Node
	for i, id := range ids {
		n := newNode(t, id)
		var seeds []string
		if i > 0 {
			seeds = []string{nodes[0].Addr()}
		}
		if err := n.Start(t.Context(), seeds...); err != nil {
			t.Fatalf("Start %s: %v", id, err)
		}
		nodes = append(nodes, n)
	}
	return nodes
}

// eventually polls check until it returns nil, and fails the test with its
// last error after patience.
func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached within %v: %v", what, patience, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// register registers n in group, failing the test on an error.
func register(t *testing.T, n *memberlist.Node, group string, c strategy.Candidate) {
	t.Helper()
	if _, err := n.Register(t.Context(), group, c); err != nil {
		t.Fatalf("Register %s in %s: %v", n.ID(), group, err)
	}
}

// members lists group as n sees it, as "id:score:weight:meta" strings in
// n's order.
func members(n *memberlist.Node, group string) ([]string, []strategy.Candidate, error) {
	ms, err := n.Members(context.Background(), group)
	var out []string
	for _, m := range ms {
		out = append(out, fmt.Sprintf("%s:%g:%g:%v", m.ID, m.Score, m.Weight, m.Meta))
	}
	return out, ms, err
}

// sees returns a check that every node lists exactly want in group.
func sees(nodes []*memberlist.Node, group string, want ...string) func() error {
	return func() error {
		for _, n := range nodes {
			got, _, err := members(n, group)
			if err != nil {
				return err
			}
			if !slices.Equal(got, want) {
				return fmt.Errorf("%s lists %v, want %v", n.ID(), got, want)
			}
		}
		return nil
	}
}
