package main

// Scenario "operator": a reconcile loop that writes a resource, and why it
// must pass its fencing token along. A leader can be paused (a long GC, a
// SIGSTOP, a VM migration) between deciding to write and writing; while it
// is frozen its lease runs out and another replica leads, and when it wakes
// it writes anyway: it never got to look at its term. Leader election alone
// cannot stop that write. The store can: the resource lives in the lock's
// own store, and every write goes through the backend's native fence
// (each backend's Fence), which refuses it once the term is over.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/hustingstest"
)

const (
	operatorTTL      = time.Second
	operatorRetry    = 100 * time.Millisecond
	operatorEvery    = 100 * time.Millisecond // between reconcile passes
	operatorFreezeAt = 3                      // the first leader freezes in this pass
)

// operatorResource is what the operator writes (a config key, a row): a
// key in the lock's own store, written under the native fence. It also
// notes, for the narration, the last write the store took and how many it
// refused.
type operatorResource struct {
	key  *fencedKey
	name string // the lock's

	mu       sync.Mutex
	highest  events.Token
	spec, by string
	rejected int
}

func (r *operatorResource) write(ctx context.Context, token events.Token, id, spec string) error {
	err := r.key.put(ctx, r.name, token, spec)
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case errors.Is(err, backends.ErrNotHeld):
		r.rejected++
	case err == nil:
		r.highest, r.spec, r.by = token, spec, id
	}
	return err
}

func (r *operatorResource) token() events.Token {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.highest
}

// operatorFreeze freezes the first leader to reach pass operatorFreezeAt,
// between reading the spec and writing it, until thaw is closed.
type operatorFreeze struct {
	claimed atomic.Bool
	frozen  chan events.Event // the frozen leader's term; buffered: sent once
	spec    string            // what it read, set before frozen is sent
	thaw    chan struct{}
	wrote   chan error // the frozen leader's write, once it woke; buffered
}

func operatorScenario(ctx context.Context, env *scenarioEnv) error {
	b, closeBackend, err := env.backend.open(ctx)
	if err != nil {
		return err
	}
	defer closeBackend()
	name := fmt.Sprintf("scenario-operator-%x/reconcile", time.Now().UnixNano())
	t, err := env.backend.check()
	if err != nil {
		return err
	}
	key, err := openFencedKey(ctx, t, b, name)
	if err != nil {
		return err
	}
	defer key.close()
	res := &operatorResource{key: key, name: name}
	var desired atomic.Int64 // the replicas the user asks for: the spec the operator reads
	desired.Store(3)
	fz := &operatorFreeze{frozen: make(chan events.Event, 1), thaw: make(chan struct{}), wrote: make(chan error, 1)}

	var wg, closers sync.WaitGroup // closers: a crashed replica takes a while to close, so close both at once
	defer wg.Wait()
	defer closers.Wait()
	thaw := sync.OnceFunc(func() { close(fz.thaw) })
	defer thaw() // first of all on an early return: let a frozen leader go
	links := map[string]*hustingstest.Crashable{}
	for _, id := range []string{"alpha", "bravo"} {
		// Each replica reaches the backend through a link the scenario can
		// cut, to freeze its whole process, keep-alives included.
		links[id] = hustingstest.NewCrashable(b)
		c, err := campaign.New(links[id], name, campaign.WithID(id), campaign.WithTTL(operatorTTL), campaign.WithRetry(operatorRetry))
		if err != nil {
			return err
		}
		defer closers.Go(func() { c.Close() })
		wg.Go(func() {
			for e := range c.Events() {
				env.tl.event(e)
			}
		})
		wg.Go(func() { _ = campaign.WhileLeader(ctx, c, operatorReconcile(res, &desired, fz)) })
	}
	env.tl.note("two operator replicas; the leader reconciles every %v, writing the spec (replicas=%d) to a key in the lock's own store, under the backend's fence for its term's token", operatorEvery, desired.Load())
	env.tl.header()

	var old events.Event
	select {
	case old = <-fz.frozen:
	case <-time.After(time.Minute):
		return fmt.Errorf("operator: no leader reached pass %d", operatorFreezeAt)
	case <-ctx.Done():
		return ctx.Err()
	}
	env.tl.note("%s freezes in pass %d, after reading the spec and before writing it (a long GC pause, say); frozen, it renews nothing either", old.Holder, operatorFreezeAt)
	links[old.Holder].Crash()
	// Deferred after the closes, so it runs before them: at the end the
	// frozen replica's calls fail at once, as a dead host's would, and
	// closing it does not wait out its hung session close.
	defer links[old.Holder].Refuse()
	desired.Store(5)
	env.tl.note("meanwhile the user scales the app to replicas=%d", desired.Load())
	if err := waitUntil(ctx, func() bool { return res.token() > old.Token }); err != nil {
		return fmt.Errorf("operator: no new leader wrote: %w", err)
	}
	res.mu.Lock()
	env.tl.note("%s leads and writes the spec with token %d; %s is still frozen mid-pass", res.by, res.highest, old.Holder)
	res.mu.Unlock()

	thaw()
	werr := <-fz.wrote
	env.tl.note("%s wakes and finishes its pass: it writes %s with token %d, its term long revoked; the store refuses it: %v", old.Holder, fz.spec, old.Token, werr)
	stored, err := key.get(ctx)
	if err != nil {
		return fmt.Errorf("operator: read the spec back: %w", err)
	}
	res.mu.Lock()
	defer res.mu.Unlock()
	env.tl.note("the store holds %s, written by %s (token %d): %d stale write(s) refused, and the user's change survived", stored, res.by, res.highest, res.rejected)
	if !errors.Is(werr, backends.ErrNotHeld) || res.rejected != 1 || stored != res.spec {
		return fmt.Errorf("operator: the stale write was not refused (write error %v, %d refusals, the store holds %q)", werr, res.rejected, stored)
	}
	return nil
}

// operatorReconcile returns the leader's loop: every operatorEvery it
// reads the desired spec and writes it to res with the term's token.
func operatorReconcile(res *operatorResource, desired *atomic.Int64, fz *operatorFreeze) func(context.Context, events.Event) error {
	return func(ctx context.Context, term events.Event) error {
		t := time.NewTicker(operatorEvery)
		defer t.Stop()
		for pass := 1; ; pass++ {
			select {
			case <-ctx.Done():
				return nil // the term ended: stop writing
			case <-t.C:
			}
			spec := fmt.Sprintf("replicas=%d", desired.Load())
			if pass == operatorFreezeAt && fz.claimed.CompareAndSwap(false, true) {
				fz.spec = spec
				fz.frozen <- term
				<-fz.thaw // frozen: a paused process looks at no context,
				// and writes on waking, its term long over
				err := res.write(context.WithoutCancel(ctx), term.Token, term.Holder, spec)
				fz.wrote <- err
				return err
			}
			if err := res.write(ctx, term.Token, term.Holder, spec); err != nil {
				return err // refused: step down
			}
		}
	}
}
