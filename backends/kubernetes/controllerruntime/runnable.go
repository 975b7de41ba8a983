package crleader

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
)

var (
	_ manager.Runnable               = (*Runnable)(nil)
	_ manager.LeaderElectionRunnable = (*Runnable)(nil)
)

// Runnable is a manager.Runnable that runs a function only while a term is
// in force, under a context that ends with the term and carries it (see
// Term), so the function can fence its writes with the term's token. Make
// it with WhileLeader or Lock.WhileLeader and add it to the manager.
type Runnable struct {
	fn   func(ctx context.Context) error
	c    *campaign.Campaign // WhileLeader's
	lock *Lock              // Lock.WhileLeader's
}

// termKey is the context key of the term's Elected event.
type termKey struct{}

// Term returns the Elected event of the term ctx was given for by a
// Runnable (its Token is the fencing token, Deadline the local deadline
// as of the election); ok is false for any other context.
func Term(ctx context.Context) (elected events.Event, ok bool) {
	elected, ok = ctx.Value(termKey{}).(events.Event)
	return elected, ok
}

// WhileLeader returns a Runnable that campaigns on c, elected on its own
// lock whatever the manager's leader election says (NeedLeaderElection is
// false), and calls fn once per term as campaign.WhileLeader does: fn's
// context ends the moment the term ends, a graceful stop (the manager's)
// releases the lock only after fn returned, bounded by c's grace period,
// and an error fn returns while its term is in force is logged and the
// term resigned. Start returns when the manager stops. A nil c or fn
// returns an error matching campaign.ErrInvalid.
func WhileLeader(c *campaign.Campaign, fn func(ctx context.Context) error) (*Runnable, error) {
	if c == nil || fn == nil {
		return nil, fmt.Errorf("%w: nil campaign or function", campaign.ErrInvalid)
	}
	return &Runnable{fn: fn, c: c}, nil
}

// WhileLeader returns a Runnable that the manager runs while it leads on l
// (NeedLeaderElection is true; l must be the manager's lock, see Options):
// fn's context ends when the manager stops it or, at once, when l's term
// ends (context.Cause is then ErrTermEnded), whichever comes first, and
// carries that term. An error from fn
// stops the manager, as any runnable's does. A nil fn returns an error
// matching campaign.ErrInvalid.
func (l *Lock) WhileLeader(fn func(ctx context.Context) error) (*Runnable, error) {
	if fn == nil {
		return nil, fmt.Errorf("%w: nil function", campaign.ErrInvalid)
	}
	return &Runnable{fn: fn, lock: l}, nil
}

// NeedLeaderElection reports whether the manager must lead before it starts
// r: true for Lock.WhileLeader's, false for WhileLeader's, which elects
// itself.
func (r *Runnable) NeedLeaderElection() bool { return r.lock != nil }

// Start runs r until ctx ends (the manager's stop). It returns nil then,
// and fn's error if Lock.WhileLeader's fn fails.
func (r *Runnable) Start(ctx context.Context) error {
	if r.lock != nil {
		return r.startOnLock(ctx)
	}
	err := campaign.WhileLeader(ctx, r.c, func(ctx context.Context, elected events.Event) error {
		return r.fn(context.WithValue(ctx, termKey{}, elected))
	})
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// startOnLock runs fn under the term client-go was granted. If that term
// already ended, client-go is about to report the loss and fn does not run.
func (r *Runnable) startOnLock(ctx context.Context) error {
	l := r.lock
	l.mu.Lock()
	t := l.term
	granted := t != nil && l.granted == t.elected.Token
	l.mu.Unlock()
	if !granted {
		return nil
	}
	ctx, cancel := context.WithCancelCause(context.WithValue(ctx, termKey{}, t.elected))
	defer cancel(nil)
	stop := context.AfterFunc(t.ctx, func() { cancel(ErrTermEnded) })
	defer stop()
	return r.fn(ctx)
}
