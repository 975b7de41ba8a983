package ops_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/group"
	"github.com/hustings/hustings/ops"
)

// The exposition controller-runtime's registry gives for the gauge
// (sigs.k8s.io/controller-runtime/pkg/metrics/leaderelection.go), byte for
// byte but for the series.
const masterStatusHeader = `# HELP leader_election_master_status Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease. Please make sure to group by name.
# TYPE leader_election_master_status gauge
`

// newStatus registers a MasterStatus on a registry of its own.
func newStatus(t *testing.T) (*ops.MasterStatus, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := ops.NewMasterStatus(reg)
	if err != nil {
		t.Fatal(err)
	}
	return m, reg
}

// expectStatus checks reg's gauge against want, name → value.
func expectStatus(t *testing.T, reg *prometheus.Registry, want map[string]int) {
	t.Helper()
	var b strings.Builder
	b.WriteString(masterStatusHeader)
	for _, name := range []string{"job", "other", "tenants"} {
		if v, ok := want[name]; ok {
			fmt.Fprintf(&b, "leader_election_master_status{name=%q} %d\n", name, v)
		}
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(b.String()), "leader_election_master_status"); err != nil {
		t.Error(err)
	}
}

// The leader's gauge is 1, the follower's 0, and they swap on a handover;
// a campaign for another name keeps a series of its own.
func TestMasterStatusFollowsLeadership(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		ma, rega := newStatus(t)
		mb, regb := newStatus(t)
		a := start(t, b, "job", "a", nil, ops.WithMasterStatus(ma))
		start(t, b, "other", "a", nil, ops.WithMasterStatus(ma))
		synctest.Wait()
		start(t, b, "job", "b", nil, ops.WithMasterStatus(mb))
		synctest.Wait()
		expectStatus(t, rega, map[string]int{"job": 1, "other": 1})
		expectStatus(t, regb, map[string]int{"job": 0})
		if err := a.Resign(t.Context()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(ttl)
		synctest.Wait()
		expectStatus(t, rega, map[string]int{"job": 0, "other": 1})
		expectStatus(t, regb, map[string]int{"job": 1})
	})
}

// A group's gauge is labelled with the group's name and is 1 while the
// process leads one of its slots: with three candidates for two slots,
// the one waiting reads 0 until a leader leaves.
func TestMasterStatusOfAGroup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		var (
			cs   []*campaign.Campaign
			regs []*prometheus.Registry
		)
		for _, id := range []string{"a", "b", "c"} {
			m, reg := newStatus(t)
			g, err := group.New(b, "tenants", 2, campaign.WithID(id), campaign.WithTTL(ttl), campaign.WithRetry(ttl/4), ops.WithMasterStatus(m))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); _ = g.Run(ctx) }()
			t.Cleanup(func() { cancel(); <-done })
			cs, regs = append(cs, g), append(regs, reg)
			synctest.Wait()
		}
		for i, g := range cs {
			if want := map[bool]int{true: 1, false: 0}[i < 2]; g.State().Leader != (want == 1) {
				t.Fatalf("candidate %d leads: %v; want the first two to lead", i, g.State().Leader)
			}
		}
		expectStatus(t, regs[0], map[string]int{"tenants": 1})
		expectStatus(t, regs[1], map[string]int{"tenants": 1})
		expectStatus(t, regs[2], map[string]int{"tenants": 0})
		if err := cs[0].Close(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(ttl)
		synctest.Wait()
		if !cs[2].State().Leader {
			t.Fatal("the third candidate did not take the slot the first left")
		}
		expectStatus(t, regs[0], map[string]int{"tenants": 0})
		expectStatus(t, regs[2], map[string]int{"tenants": 1})
	})
}

func TestMasterStatusRejectsBadInput(t *testing.T) {
	if _, err := ops.NewMasterStatus(nil); !errors.Is(err, campaign.ErrInvalid) {
		t.Errorf("NewMasterStatus(nil) = %v, want ErrInvalid", err)
	}
	if _, err := ops.NewMasterStatus((*prometheus.Registry)(nil)); !errors.Is(err, campaign.ErrInvalid) {
		t.Errorf("NewMasterStatus of a nil *prometheus.Registry = %v, want ErrInvalid", err)
	}
	reg := prometheus.NewRegistry()
	m, err := ops.NewMasterStatus(reg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ops.NewMasterStatus(reg); err == nil {
		t.Error("registering the gauge twice on one registry succeeded")
	}
	if _, err := campaign.New(memory.New(), "x", ops.WithMasterStatus(nil)); !errors.Is(err, campaign.ErrInvalid) {
		t.Errorf("WithMasterStatus(nil) = %v, want ErrInvalid", err)
	}
	if _, err := campaign.NewSession(memory.New(), ops.WithMasterStatus(m)); !errors.Is(err, campaign.ErrInvalid) {
		t.Errorf("NewSession with WithMasterStatus = %v, want ErrInvalid", err)
	}
	_, err = campaign.RunIfLeader(t.Context(), memory.New(), "x", func(context.Context, events.Token) (int, error) { return 0, nil }, ops.WithMasterStatus(m))
	if !errors.Is(err, campaign.ErrInvalid) {
		t.Errorf("RunIfLeader with WithMasterStatus = %v, want ErrInvalid", err)
	}
}
