package main

// Scenario "tenants": a per-tenant job (a nightly roll-up, a sync) must run
// on one replica per tenant, and 200 tenants must not all land on the same
// replica. Each tenant gets its own campaign, named prefix + tenant ID, and
// each replica runs all its campaigns on one shared session (NewSession +
// WithSession): one keep-alive per tick renews every lock it holds.
//
// Campaigns are first come, first served. To spread the tenants, each
// replica enters the tenants that hash to it first, and the others a moment
// later as standbys, which take a tenant over only when its leader leaves.

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"sync"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/campaign"
)

const (
	tenantsCount = 200
	tenantsTTL   = 2 * time.Second
	tenantsRetry = 250 * time.Millisecond
)

// tenantsReplica is one replica: a session and a campaign per tenant. A
// real one would run each tenant's job under campaign.WhileLeader; here the
// campaigns alone show who leads what.
type tenantsReplica struct {
	id   string
	cand *campaign.Session
	per  [tenantsCount]*campaign.Campaign // nil until entered
}

// tenantsID names tenant i; tenantsHome is the replica it hashes to.
func tenantsID(i int) string { return fmt.Sprintf("tenant-%03d", i) }

func tenantsHome(i, replicas int) int {
	h := fnv.New32a()
	h.Write([]byte(tenantsID(i)))
	return int(h.Sum32() % uint32(replicas))
}

func tenantsScenario(ctx context.Context, env *scenarioEnv) error {
	b, closeBackend, err := env.backend.open(ctx)
	if err != nil {
		return err
	}
	defer closeBackend()
	prefix := fmt.Sprintf("scenario-tenants-%x/rollup/", time.Now().UnixNano())
	var wg sync.WaitGroup
	defer wg.Wait()
	var rs []*tenantsReplica
	for _, id := range []string{"alpha", "bravo", "charlie", "delta"} {
		cand, err := campaign.NewSession(b, campaign.WithID(id), campaign.WithTTL(tenantsTTL), campaign.WithRetry(tenantsRetry))
		if err != nil {
			return err
		}
		rs = append(rs, &tenantsReplica{id: id, cand: cand})
		wg.Go(func() { _ = cand.Run(ctx) })
	}
	defer tenantsCloseAll(rs)
	env.tl.note("%d tenants, %d replicas; a campaign per tenant (%q + tenant ID), one session per replica", tenantsCount, len(rs), "rollup/")

	// enter starts, on every replica, the campaigns of the tenants that hash
	// to it (home) or of all the others (standbys).
	enter := func(home bool) error {
		for i := range tenantsCount {
			for k, r := range rs {
				if (tenantsHome(i, len(rs)) == k) == home {
					if err := r.enter(ctx, &wg, b, prefix, i); err != nil {
						return err
					}
				}
			}
		}
		return nil
	}
	if err := enter(true); err != nil {
		return err
	}
	if err := tenantsSettle(ctx, env.tl, rs, "each replica entered its own tenants", time.Now()); err != nil {
		return err
	}
	if err := enter(false); err != nil {
		return err
	}
	env.tl.note("every replica entered the other tenants as a standby: %d campaigns in all", tenantsCount*len(rs))

	// One replica leaves (a deploy, say): its standbys take its tenants.
	gone := rs[len(rs)-1]
	env.tl.note("%s leaves: its campaigns close, releasing their locks, then its session", gone.id)
	left := time.Now()
	gone.close()
	return tenantsSettle(ctx, env.tl, rs, gone.id+" left", left)
}

// enter starts the campaign for tenant i on r's session.
func (r *tenantsReplica) enter(ctx context.Context, wg *sync.WaitGroup, b backends.Backend, prefix string, i int) error {
	c, err := campaign.New(b, prefix+tenantsID(i), campaign.WithSession(r.cand))
	if err != nil {
		return err
	}
	r.per[i] = c
	wg.Go(func() { _ = c.Run(ctx) })
	return nil
}

// close closes r's campaigns, then its session (closing the session first
// would end every term at once, as a crash does).
func (r *tenantsReplica) close() {
	for _, c := range r.per {
		if c != nil {
			c.Close()
		}
	}
	r.cand.Close()
}

func tenantsCloseAll(rs []*tenantsReplica) {
	var wg sync.WaitGroup
	for _, r := range rs {
		wg.Go(r.close)
	}
	wg.Wait()
}

// tenantsSettle waits until every tenant is led by exactly one of rs, then
// prints how many each leads, and how long since began that took. It
// fails if a tenant is seen with two leaders.
func tenantsSettle(ctx context.Context, tl *timeline, rs []*tenantsReplica, when string, began time.Time) error {
	var leads map[string]int
	var most, least int // leaders of the tenant with the most and the fewest
	err := waitUntil(ctx, func() bool {
		leads, most, least = tenantsLeaders(rs)
		return most > 1 || (most == 1 && least == 1)
	})
	if most > 1 {
		return fmt.Errorf("tenants: a tenant had %d leaders at once", most)
	}
	if err != nil {
		return fmt.Errorf("tenants: not every tenant got exactly one leader: %w", err)
	}
	var shares []string
	for _, r := range rs {
		shares = append(shares, fmt.Sprintf("%s %d", r.id, leads[r.id]))
	}
	tl.note("%s: every one of %d tenants led by exactly one replica (settled in %v): %v", when, tenantsCount, since(began), shares)
	return nil
}

// tenantsLeaders counts, from each campaign's state, how many tenants each
// replica leads, and the most and fewest leaders any tenant has.
func tenantsLeaders(rs []*tenantsReplica) (leads map[string]int, most, least int) {
	var perTenant [tenantsCount]int
	leads = map[string]int{}
	for _, r := range rs {
		for i, c := range r.per {
			if c != nil && c.State().Leader {
				perTenant[i]++
				leads[r.id]++
			}
		}
	}
	return leads, slices.Max(perTenant[:]), slices.Min(perTenant[:])
}
