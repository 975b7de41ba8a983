package memberlist_test

import (
	"errors"
	"testing"

	"github.com/hustings/hustings/strategy"
	"github.com/hustings/hustings/transport/memberlist"
)

func TestMembersSpreadByGossip(t *testing.T) {
	t.Parallel()
	nodes := cluster(t, "n1", "n2", "n3")
	for i, n := range nodes {
		register(t, n, "g", strategy.Candidate{Score: float64(i + 1), Weight: float64(10 * (i + 1)), Meta: map[string]string{"zone": n.ID()}})
	}
	eventually(t, "every node lists all three", sees(nodes, "g",
		"n1:1:10:map[zone:n1]", "n2:2:20:map[zone:n2]", "n3:3:30:map[zone:n3]"))

	_, ms, err := members(nodes[2], "g")
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(ms); i++ {
		if ms[i-1].Order >= ms[i].Order {
			t.Errorf("Order %d of %s is not below %d of %s, which started later", ms[i-1].Order, ms[i-1].ID, ms[i].Order, ms[i].ID)
		}
	}
	if got, _, err := members(nodes[0], "other"); err != nil || len(got) != 0 {
		t.Errorf("group other lists %v (%v), want nobody", got, err)
	}
}

func TestRegisterUpdatesAndDeregisterSpread(t *testing.T) {
	t.Parallel()
	nodes := cluster(t, "a1", "a2", "a3")
	for _, n := range nodes {
		register(t, n, "g", strategy.Candidate{Score: 1})
	}
	eventually(t, "all registered", sees(nodes, "g", "a1:1:0:map[]", "a2:1:0:map[]", "a3:1:0:map[]"))

	c, err := nodes[1].Register(t.Context(), "g", strategy.Candidate{ID: "a2", Score: 5, Weight: 2})
	if err != nil {
		t.Fatal(err)
	}
	if c.ID != "a2" || c.Score != 5 || c.Order == 0 {
		t.Errorf("Register returned %+v, want ID a2, score 5 and the join order", c)
	}
	eventually(t, "the new score spread", sees(nodes, "g", "a1:1:0:map[]", "a2:5:2:map[]", "a3:1:0:map[]"))

	if err := nodes[1].Deregister(t.Context(), "g"); err != nil {
		t.Fatal(err)
	}
	if err := nodes[1].Deregister(t.Context(), "g"); err != nil {
		t.Errorf("second Deregister: %v, want nil", err)
	}
	eventually(t, "a2 left the group", sees(nodes, "g", "a1:1:0:map[]", "a3:1:0:map[]"))
}

func TestClosedNodeDropsOut(t *testing.T) {
	t.Parallel()
	nodes := cluster(t, "c1", "c2", "c3")
	for _, n := range nodes {
		register(t, n, "g", strategy.Candidate{})
	}
	eventually(t, "all registered", sees(nodes, "g", "c1:0:0:map[]", "c2:0:0:map[]", "c3:0:0:map[]"))

	gone := nodes[2]
	if err := gone.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "c3 dropped out", sees(nodes[:2], "g", "c1:0:0:map[]", "c2:0:0:map[]"))

	if err := gone.Close(); err != nil {
		t.Errorf("second Close: %v, want nil", err)
	}
	ctx := t.Context()
	if _, err := gone.Members(ctx, "g"); !errors.Is(err, memberlist.ErrClosed) {
		t.Errorf("Members after Close: %v, want ErrClosed", err)
	}
	if _, err := gone.Register(ctx, "g", strategy.Candidate{}); !errors.Is(err, memberlist.ErrClosed) {
		t.Errorf("Register after Close: %v, want ErrClosed", err)
	}
	if err := gone.Announce(ctx, "lock", 0, 1); !errors.Is(err, memberlist.ErrClosed) {
		t.Errorf("Announce after Close: %v, want ErrClosed", err)
	}
	if err := gone.Start(ctx); !errors.Is(err, memberlist.ErrClosed) {
		t.Errorf("Start after Close: %v, want ErrClosed", err)
	}
	if err := gone.Join(ctx, nodes[0].Addr()); !errors.Is(err, memberlist.ErrClosed) {
		t.Errorf("Join after Close: %v, want ErrClosed", err)
	}
	if l := gone.Leaders("lock"); l != nil {
		t.Errorf("Leaders after Close: %v, want nil", l)
	}
}

// A node takes registrations before Start, lists only itself until it
// joins, and sends them when it starts.
func TestRegisterBeforeStart(t *testing.T) {
	t.Parallel()
	first := cluster(t, "b1")[0]
	late := newNode(t, "b2")
	register(t, late, "g", strategy.Candidate{Score: 2})
	register(t, first, "g", strategy.Candidate{Score: 1})
	if got, _, err := members(late, "g"); err != nil || len(got) != 1 || got[0] != "b2:2:0:map[]" {
		t.Errorf("before Start: %v, %v; want only b2", got, err)
	}
	if late.Addr() != "" {
		t.Errorf("Addr before Start = %q, want empty", late.Addr())
	}
	if err := late.Start(t.Context(), first.Addr()); err != nil {
		t.Fatal(err)
	}
	eventually(t, "both listed", sees([]*memberlist.Node{first, late}, "g", "b1:1:0:map[]", "b2:2:0:map[]"))
}
