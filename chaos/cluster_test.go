package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/dial"
	"github.com/hustings/hustings/chaos/history"
)

// The locks of a run: one lock, and a group of groupSlots slots. How many
// candidates campaign for each is the profile's (nodes). A settle waits
// at most maxOutage longer for the server's and the harness's stalls.
const (
	lockName   = "lock"
	groupName  = "grp"
	groupSlots = 3
	maxOutage  = 30 * time.Second
)

// cluster is one backend's run: its server, the fenced resource, every
// node ever started, and what was injected.
type cluster struct {
	t      *testing.T
	srv    server
	res    *resource
	dir    string
	ttl    time.Duration
	rng    *rand.Rand
	direct backends.Backend // reaches the server without a link

	nodes   []*proc
	seq     map[string]int
	faults  []history.Fault
	settles []history.Settle
	bounds  history.Config
	obs     *observer
}

// newCluster starts the server, the fenced resource and every node.
func newCluster(t *testing.T, b backend, p profile) *cluster {
	c := &cluster{
		t: t, srv: b.start(t), res: startResource(t), dir: chaosDir(t), ttl: p.ttl,
		// one stream of draws per backend, so their schedules differ
		rng: rand.New(rand.NewPCG(uint64(p.seed), uint64(len(b.name)))), seq: map[string]int{},
		bounds: p.bounds(b),
	}
	if p.out != "" { // keep the nodes' logs
		c.dir = filepath.Join(p.out, b.name)
		if err := os.MkdirAll(c.dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	direct, closeDirect, err := dial.Open(t.Context(), c.srv.url(c.srv.addr))
	if err != nil {
		t.Fatalf("open %s: %v", b.name, err)
	}
	t.Cleanup(closeDirect)
	c.direct = direct
	c.obs = c.observe()
	t.Cleanup(func() { c.obs.halt() })
	for range p.lockNodes {
		c.add(lockName)
	}
	for range p.groupNodes {
		c.add(groupName)
	}
	return c
}

// add starts one more candidate for name.
func (c *cluster) add(name string) *proc {
	c.seq[name]++
	slots := 1
	if name == groupName {
		slots = groupSlots
	}
	id := fmt.Sprintf("%s-%d", name, c.seq[name])
	p, err := spawn(c.t, c.dir, id, name, slots, c.ttl, c.srv.addr, c.srv.url, c.res.URL())
	if err != nil {
		c.t.Fatalf("start node %s: %v", id, err)
	}
	c.nodes = append(c.nodes, p)
	return p
}

// live returns the nodes whose processes run.
func (c *cluster) live() []*proc {
	var out []*proc
	for _, p := range c.nodes {
		if p.Alive() {
			out = append(out, p)
		}
	}
	return out
}

// leaders returns the live nodes that believe they lead.
func (c *cluster) leaders() []*proc {
	var out []*proc
	for _, p := range c.live() {
		if p.Leads() {
			out = append(out, p)
		}
	}
	return out
}

// keys are the locks of a run, as the backend names them.
func keys() map[string]history.Key {
	m := map[string]history.Key{lockName: {Name: lockName}}
	for i := range groupSlots {
		m[fmt.Sprintf("%s/slot-%d", groupName, i)] = history.Key{Name: groupName, Slot: i}
	}
	return m
}

// agree reports whether the live nodes' beliefs match the backend, every
// lock held; if not, it says how they differ.
func (c *cluster) agree() (bool, string) {
	before := history.Beliefs(c.liveEvents())
	ctx, cancel := context.WithTimeout(c.t.Context(), 2*time.Second)
	defer cancel()
	holders := map[history.Key]history.Holding{}
	for name, k := range keys() {
		h, err := c.direct.Holder(ctx, name)
		if err != nil {
			return false, fmt.Sprintf("Holder(%s): %v", name, err)
		}
		if h.ID != "" {
			holders[k] = history.Holding{Node: h.ID, Token: h.Token}
		}
	}
	after := history.Beliefs(c.liveEvents())
	if fmt.Sprint(before) != fmt.Sprint(after) {
		return false, "beliefs changed while the backend was read"
	}
	if err := history.Agree(after, holders); err != nil {
		return false, err.Error()
	}
	if len(holders) != len(keys()) {
		return false, fmt.Sprintf("only %d of %d locks held", len(holders), len(keys()))
	}
	return true, ""
}

// liveEvents returns the live nodes' events.
func (c *cluster) liveEvents() []history.Event {
	h := history.History{Leaks: map[string]int{}}
	for _, p := range c.live() {
		p.record(&h)
	}
	return h.Events
}

// settle waits, after a heal at healed, until beliefs match the backend,
// and records how long that took; it gives up after wait, lengthened by
// the time the server or the harness stalled meanwhile (up to maxOutage).
func (c *cluster) settle(healed time.Time, wait time.Duration) {
	detail := ""
	for {
		at := time.Now()
		ok, why := c.agree()
		if ok {
			c.settles = append(c.settles, history.Settle{Healed: healed, Agreed: at})
			return
		}
		detail = why
		if at.After(healed.Add(wait + min(c.obs.outage(healed, at), maxOutage))) {
			c.settles = append(c.settles, history.Settle{Healed: healed, Detail: detail})
			c.t.Logf("not settled: %s", detail)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// finish stops every live node gracefully, all at once, and records a
// violation for any that does not exit with status 0.
func (c *cluster) finish() {
	live := c.live()
	for _, p := range live {
		_ = p.signal(sigterm)
	}
	for _, p := range live {
		if err := p.wait(15 * time.Second); err != nil {
			c.t.Error(err)
		}
	}
}

// history assembles the run's record.
func (c *cluster) history() history.History {
	h := history.History{Faults: slices.Concat(c.faults, c.obs.halt()), Writes: c.res.Writes(), Settles: c.settles, Leaks: map[string]int{}}
	for _, p := range c.nodes {
		p.record(&h)
	}
	return h
}

// describe names a node's role for the progress log.
func describe(p *proc) string {
	if l, ok := p.term(); ok {
		return fmt.Sprintf("%s (leader of %s[%d])", p.id, l.Name, l.Slot)
	}
	return p.id
}

// pick returns a random element of ps.
func pick[T any](rng *rand.Rand, ps []T) T { return ps[rng.IntN(len(ps))] }

// joinKinds formats fault counts in a fixed order.
func joinKinds(m map[history.FaultKind]int) string {
	var parts []string
	for _, k := range faultOrder {
		if m[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
		}
	}
	return strings.Join(parts, ", ")
}

// chaosDir is where the nodes' logs go: HUSTINGS_CHAOS_LOGS if set (kept
// after the test, to read a failure's), else a temporary directory.
func chaosDir(t *testing.T) string {
	if d := os.Getenv("HUSTINGS_CHAOS_LOGS"); d != "" {
		dir, err := os.MkdirTemp(d, t.Name()[len("TestChaos/"):]+"-")
		if err != nil {
			t.Fatal(err)
		}
		return dir
	}
	return t.TempDir()
}
