package backendtest

import (
	"maps"
	"math"
	"slices"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/strategy"
)

// registryChecks check Backend.Members and Session.Register.
var registryChecks = []check{
	{name: "RegistryOrderAndUpdate", run: registryOrderAndUpdate},
	{name: "RegistryFollowsSessions", run: registryFollowsSessions},
	{name: "RegistryDeregister", run: registryDeregister},
	{name: "RegistryInvalidInput", run: registryInvalidInput},
}

// members lists group, failing the check on any error.
func (e *env) members(group string) []strategy.Candidate {
	e.t.Helper()
	got, err := e.b.Members(e.ctx, group)
	if err != nil {
		e.t.Fatalf("Members(%q): %v", group, err)
	}
	return got
}

// register registers s in group, failing the check on any error.
func (e *env) register(s backends.Session, group string, c strategy.Candidate) strategy.Candidate {
	e.t.Helper()
	got, err := s.Register(e.ctx, group, c)
	if err != nil {
		e.t.Fatalf("%s: Register(%q): %v", s.ID(), group, err)
	}
	return got
}

func memberIDs(cs []strategy.Candidate) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.ID)
	}
	return out
}

// registryOrderAndUpdate: orders follow registration; an update keeps the
// order and replaces score, weight and metadata.
func registryOrderAndUpdate(e *env) {
	group := e.name()
	var orders []uint64
	sessions := map[string]backends.Session{}
	for _, id := range []string{"a", "b", "c"} {
		sessions[id] = e.open(id)
		c := e.register(sessions[id], group, strategy.Candidate{ID: "ignored", Score: 1, Weight: 1})
		if c.ID != id {
			e.t.Fatalf("Register stored ID %q, want the session's %q", c.ID, id)
		}
		orders = append(orders, c.Order)
	}
	if !slices.IsSorted(orders) || orders[0] == orders[1] || orders[1] == orders[2] {
		e.t.Fatalf("registration orders %v, want strictly increasing", orders)
	}
	meta := map[string]string{"zone": "b", "queue": "7"}
	up := e.register(sessions["a"], group, strategy.Candidate{Score: 9.5, Weight: 3, Meta: meta})
	if up.Order != orders[0] {
		e.t.Fatalf("update changed the order from %d to %d", orders[0], up.Order)
	}
	got := e.members(group)
	if ids := memberIDs(got); !slices.Equal(ids, []string{"a", "b", "c"}) {
		e.t.Fatalf("Members = %v, want a, b, c in registration order", ids)
	}
	if a := got[0]; a.Score != 9.5 || a.Weight != 3 || !maps.Equal(a.Meta, meta) || a.Order != orders[0] {
		e.t.Fatalf("updated entry %+v, want score 9.5, weight 3, meta %v, order %d", a, meta, orders[0])
	}
}

// registryFollowsSessions: a closed or expired session's entry goes, and a
// newcomer is ordered after everyone registered before.
func registryFollowsSessions(e *env) {
	group := e.name()
	a, b, c := e.open("a"), e.open("b"), e.open("c")
	first := e.register(a, group, strategy.Candidate{})
	e.register(b, group, strategy.Candidate{})
	e.register(c, group, strategy.Candidate{})
	if err := a.Close(e.ctx); err != nil {
		e.t.Fatalf("Close: %v", err)
	}
	e.eventually("closed session's entry gone", func() bool {
		return slices.Equal(memberIDs(e.members(group)), []string{"b", "c"})
	})
	d := e.open("d")
	if late := e.register(d, group, strategy.Candidate{}); late.Order <= first.Order {
		e.t.Fatalf("newcomer's order %d not after %d", late.Order, first.Order)
	}
	// b stops renewing; c and d renew, every tenth of the TTL so that a
	// busy machine's stall of most of a TTL does not end them too.
	for elapsed := e.h.TTL * 0; elapsed <= e.h.TTL+e.h.TTL/10; elapsed += e.h.TTL / 10 {
		e.wait(e.h.TTL / 10)
		e.keepAlive(c)
		e.keepAlive(d)
	}
	e.eventually("expired session's entry gone", func() bool {
		return slices.Equal(memberIDs(e.members(group)), []string{"c", "d"})
	})
}

// registryDeregister: an entry can be removed while its session lives, and
// removing it twice is fine.
func registryDeregister(e *env) {
	group := e.name()
	a, b := e.open("a"), e.open("b")
	e.register(a, group, strategy.Candidate{})
	e.register(b, group, strategy.Candidate{})
	for range 2 {
		if err := a.Deregister(e.ctx, group); err != nil {
			e.t.Fatalf("Deregister: %v", err)
		}
	}
	if ids := memberIDs(e.members(group)); !slices.Equal(ids, []string{"b"}) {
		e.t.Fatalf("Members after Deregister = %v, want b", ids)
	}
}

// registryInvalidInput: bad group names, scores, weights and metadata are
// rejected with ErrInvalid.
func registryInvalidInput(e *env) {
	r := e.open("a")
	big := map[string]string{}
	for i := range 100 {
		big[string(rune('a'+i%26))+string(rune('0'+i/26))] = "x"
	}
	for what, c := range map[string]strategy.Candidate{
		"NaN score":        {Score: math.NaN()},
		"infinite score":   {Score: math.Inf(1)},
		"negative weight":  {Weight: -1},
		"100 meta entries": {Meta: big},
	} {
		_, err := r.Register(e.ctx, e.name(), c)
		e.wantErr("Register with "+what, err, backends.ErrInvalid)
	}
	_, err := r.Register(e.ctx, "", strategy.Candidate{})
	e.wantErr("Register with an empty group", err, backends.ErrInvalid)
	_, err = e.b.Members(e.ctx, "")
	e.wantErr("Members of an empty group name", err, backends.ErrInvalid)
}
