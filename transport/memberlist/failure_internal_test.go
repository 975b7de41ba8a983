package memberlist

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hustings/hustings/strategy"
)

var quick = []Option{
	WithGossipInterval(20 * time.Millisecond),
	WithProbeInterval(200 * time.Millisecond),
	WithPushPullInterval(500 * time.Millisecond),
	WithTCPTimeout(2 * time.Second),
	WithBroadcastTimeout(500 * time.Millisecond),
}

// startNode starts a registered node, joining seed unless it is nil.
func startNode(t *testing.T, id string, seed *Node) *Node {
	t.Helper()
	n, err := New(id, quick...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	if _, err := n.Register(t.Context(), "g", strategy.Candidate{Meta: map[string]string{"run": fmt.Sprint(n.order)}}); err != nil {
		t.Fatal(err)
	}
	var seeds []string
	if seed != nil {
		seeds = []string{seed.Addr()}
	}
	if err := n.Start(t.Context(), seeds...); err != nil {
		t.Fatal(err)
	}
	return n
}

// crash stops n's memberlist the way a dead process would: no leave.
func crash(n *Node) {
	n.life.Lock()
	defer n.life.Unlock()
	n.ml.Shutdown()
	n.ml = nil
	n.mu.Lock()
	n.closed = true
	n.mu.Unlock()
}

// waitFor polls until every node lists exactly the given members of g.
func waitFor(t *testing.T, what string, nodes []*Node, want ...strategy.Candidate) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := listsExactly(nodes, want)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func listsExactly(nodes []*Node, want []strategy.Candidate) error {
	for _, n := range nodes {
		got, err := n.Members(context.Background(), "g")
		if err != nil {
			return err
		}
		eq := func(a, b strategy.Candidate) bool { return a.ID == b.ID && a.Order == b.Order }
		if !slices.EqualFunc(got, want, eq) {
			return fmt.Errorf("%s lists %v, want %v", n.id, got, want)
		}
	}
	return nil
}

func me(n *Node) strategy.Candidate { return strategy.Candidate{ID: n.id, Order: n.order} }

// A node that crashes stays listed until the failure detector declares it
// dead, then goes.
func TestCrashedNodeGoesWhenDeclaredDead(t *testing.T) {
	t.Parallel()
	a := startNode(t, "a", nil)
	b := startNode(t, "b", a)
	c := startNode(t, "c", a)
	waitFor(t, "all listed", []*Node{a, b, c}, me(a), me(b), me(c))
	crash(c)
	waitFor(t, "the crashed node declared dead", []*Node{a, b}, me(a), me(b))
}

// A node that left and comes back under the same ID, on another port,
// replaces its old entry.
func TestNodeComesBackUnderItsID(t *testing.T) {
	t.Parallel()
	a := startNode(t, "x", nil)
	b := startNode(t, "y", a)
	waitFor(t, "both listed", []*Node{a, b}, me(a), me(b))
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "y gone", []*Node{a}, me(a))
	again := startNode(t, "y", a)
	waitFor(t, "y back, with its new join order", []*Node{a, again}, me(a), me(again))
}
