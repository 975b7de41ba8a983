package ops

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/elector"
	"github.com/hustings/hustings/internal/validate"
)

// The gauge's name, help and label are client-go's and controller-runtime's
// (k8s.io/component-base/metrics/prometheus/clientgo/leaderelection,
// sigs.k8s.io/controller-runtime/pkg/metrics/leaderelection.go), word for
// word, so that their dashboards and alerts work unchanged.
const (
	masterStatusName = "leader_election_master_status"
	masterStatusHelp = "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease. Please make sure to group by name."
)

// MasterStatus is the gauge leader_election_master_status{name}: 1 while
// this process leads the lock name (any slot of a group name), 0 once a
// campaign for it has started and while it does not lead. It is the
// metric client-go and controller-runtime register, with their name, help
// text and label. Make one with NewMasterStatus and give it to campaigns
// and groups with WithMasterStatus. Safe for concurrent use.
//
// Do not register it beside controller-runtime's metrics registry or
// client-go's legacy one: they register the same name.
type MasterStatus struct {
	gauge *prometheus.GaugeVec
	mu    sync.Mutex
	terms map[string]int // terms in force per name
}

// NewMasterStatus makes the gauge and registers it on reg; nothing is
// registered globally. It returns the registration's error, for example
// when a gauge of that name is already registered on reg.
func NewMasterStatus(reg prometheus.Registerer) (*MasterStatus, error) {
	if validate.Nil(reg) {
		return nil, fmt.Errorf("%w: ops: nil prometheus.Registerer", campaign.ErrInvalid)
	}
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: masterStatusName, Help: masterStatusHelp}, []string{"name"})
	if err := reg.Register(g); err != nil {
		return nil, err
	}
	return &MasterStatus{gauge: g, terms: map[string]int{}}, nil
}

// WithMasterStatus makes a campaign or group report whether it leads to
// m. Default: none. Applies to campaign.New, Session.Campaign and
// group.New (one-shot runs are not leadership in client-go's sense).
func WithMasterStatus(m *MasterStatus) campaign.Option {
	return elector.Opt("ops.WithMasterStatus", elector.ForCampaign|elector.ForGroup, func(c *elector.Config) {
		if m == nil {
			c.Reject(errors.New("ops: nil MasterStatus"))
			return
		}
		c.Hooks = append(c.Hooks, statusHook{m: m})
	})
}

// add counts a term of name beginning (+1) or ending (-1), or a campaign
// starting (0), and sets the gauge.
func (m *MasterStatus) add(name string, n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.terms[name] += n
	v := 0.0
	if m.terms[name] > 0 {
		v = 1
	}
	m.gauge.WithLabelValues(name).Set(v)
}

// statusHook feeds a MasterStatus from the engine.
type statusHook struct {
	elector.NopHook
	m *MasterStatus
}

func (k statusHook) Campaign(name, _ string) { k.m.add(name, 0) }

func (k statusHook) Term(_ context.Context, e events.Event, _ string, _ time.Duration, _ elector.Hooks, _ func() time.Time) elector.TermHook {
	k.m.add(e.Name, 1)
	return &statusTerm{m: k.m, name: e.Name}
}

// statusTerm ends a term's count once.
type statusTerm struct {
	m    *MasterStatus
	name string
}

func (t *statusTerm) Context(ctx context.Context) context.Context { return ctx }
func (t *statusTerm) Work() func()                                { return func() {} }
func (t *statusTerm) Ended(events.Event)                          { t.m.add(t.name, -1) }
