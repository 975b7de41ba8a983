package main

// Scenario "migration": five replicas of a service start at once, and each
// would migrate the database schema before serving. RunIfLeader lets one of
// them run the migration; the others skip it, and wait for a completion
// marker before they serve. They wait for the marker, not for the lock:
// the lock only says someone is migrating, the marker says it is done.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
)

const (
	migrationTarget = 42                     // the schema version this release needs
	migrationSteps  = 3                      // statements the migration runs
	migrationStep   = 100 * time.Millisecond // how long each takes
	migrationPoll   = 50 * time.Millisecond  // how often a waiter reads the marker
	// migrationLease bounds a migrator that dies: its lock frees itself
	// then, and a waiter takes over (migrationRetake). A longer migration
	// needs a longer lease; ZooKeeper caps it at its session timeout.
	migrationLease  = 3 * time.Second
	migrationRetake = time.Second // how often a waiter tries the lock again
)

// migrationMarker stands in for the schema_migrations row: the migration
// writes it with its last step, the waiting replicas read it.
type migrationMarker struct {
	mu      sync.Mutex
	version int
	by      string
	token   events.Token
	applied int // times the migration ran; the scenario promises 1
}

func (m *migrationMarker) current() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.version
}

func (m *migrationMarker) finish(id string, token events.Token) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.version, m.by, m.token = migrationTarget, id, token
	m.applied++
}

func migrationScenario(ctx context.Context, env *scenarioEnv) error {
	b, closeBackend, err := env.backend.open(ctx)
	if err != nil {
		return err
	}
	defer closeBackend()
	name := fmt.Sprintf("scenario-migration-%x/migrate-v%d", time.Now().UnixNano(), migrationTarget)
	m := &migrationMarker{version: migrationTarget - 1}
	env.tl.note("five replicas start at once; each needs schema v%d (the database is at v%d)", migrationTarget, m.current())

	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		outcomes = map[campaign.Outcome]int{}
		errs     []error
	)
	start := make(chan struct{}) // released together, as after a deploy
	for _, id := range []string{"alpha", "bravo", "charlie", "delta", "echo"} {
		wg.Go(func() {
			<-start
			outcome, err := migrationReplica(ctx, env.tl, b, name, id, m)
			mu.Lock()
			defer mu.Unlock()
			outcomes[outcome]++
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", id, err))
			}
		})
	}
	close(start)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	env.tl.note("the migration ran %d time(s), by %s (token %d); %d replicas skipped it and waited for the marker; all 5 serve v%d",
		m.applied, m.by, m.token, outcomes[campaign.Skipped], m.current())
	if m.applied != 1 || outcomes[campaign.Succeeded] != 1 {
		return fmt.Errorf("migration: ran %d times, %d replicas elected; want 1 and 1", m.applied, outcomes[campaign.Succeeded])
	}
	return nil
}

// migrationReplica is one replica's start-up: migrate if it gets the lock,
// else wait until the marker says another replica did. It returns what its
// first try did.
func migrationReplica(ctx context.Context, tl *timeline, b backends.Backend, name, id string, m *migrationMarker) (campaign.Outcome, error) {
	began := time.Now()
	migrate := migrationRun(tl, id, m)
	res, err := migrationTry(ctx, b, name, id, migrate)
	switch {
	case err != nil:
		return res.Outcome, err
	case res.Outcome == campaign.ActionFailed:
		return res.Outcome, res.Err
	case res.Outcome == campaign.Skipped:
		tl.note("%s skipped: another replica is migrating; it waits for the marker", id)
		if err := migrationAwait(ctx, b, name, id, m, migrate); err != nil {
			return res.Outcome, err
		}
	}
	tl.note("%s sees v%d in the marker %v after it started, and serves", id, migrationTarget, since(began))
	return res.Outcome, nil
}

// migrationRun returns the migration, as RunIfLeader runs it.
func migrationRun(tl *timeline, id string, m *migrationMarker) func(context.Context, events.Token) (bool, error) {
	return func(ctx context.Context, token events.Token) (bool, error) {
		// Check again under the lock: a replica that gets it after the
		// migration finished must find nothing to do.
		if m.current() >= migrationTarget {
			return false, nil
		}
		tl.note("%s got the lock (token %d) and migrates to v%d", id, token, migrationTarget)
		for range migrationSteps {
			if err := migrationSleep(ctx, migrationStep); err != nil {
				return false, err // the lease ran out: stop before writing the marker
			}
		}
		m.finish(id, token) // a real migration writes it in its last transaction
		return true, nil
	}
}

// migrationTry runs the migration if the lock is free. A backend that
// cannot be reached (a connection still being set up, say) leaves the run
// undecided, not skipped: it tries again, for a while.
func migrationTry(ctx context.Context, b backends.Backend, name, id string, migrate func(context.Context, events.Token) (bool, error)) (res campaign.Result[bool], err error) {
	for range 20 {
		res, err = campaign.RunIfLeader(ctx, b, name, migrate, campaign.WithID(id), campaign.WithTTL(migrationLease))
		if !errors.Is(err, backends.ErrUnavailable) || migrationSleep(ctx, migrationPoll) != nil {
			break
		}
	}
	return res, err
}

// migrationAwait polls the marker until it says done. Now and then it
// tries the lock again: if the migrator died, its lease has freed it, and
// this replica takes over (and finds nothing to do if the migration had
// finished after all).
func migrationAwait(ctx context.Context, b backends.Backend, name, id string, m *migrationMarker, migrate func(context.Context, events.Token) (bool, error)) error {
	for lastTry := time.Now(); m.current() < migrationTarget; {
		if err := migrationSleep(ctx, migrationPoll); err != nil {
			return err
		}
		if time.Since(lastTry) < migrationRetake {
			continue
		}
		res, err := migrationTry(ctx, b, name, id, migrate)
		if err != nil {
			return err
		}
		if res.Outcome == campaign.ActionFailed {
			return res.Err
		}
		lastTry = time.Now()
	}
	return nil
}

// migrationSleep waits for d, or returns ctx's error if it ends first.
func migrationSleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
