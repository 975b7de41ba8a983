package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/internal/validate"
)

// relistAfter bounds how long a watch that fired waits for its
// receiver's reaction (an Acquire or Holder of the name through this
// Backend, which lists the lock's children) to set its next watch from
// that listing instead of making one of its own.
const relistAfter = 20 * time.Millisecond

// Watch returns a channel that receives a value (coalesced, buffer of one)
// when the node it watches changes: the predecessor of the oldest node
// that a session of this Backend has queued on name, else the oldest child
// (the holder), else the hold marker; with no child, the children of the
// lock's parent; with no parent, its creation. So each waiter is woken by
// its predecessor only, not by every change (no herd effect).
//
// It picks the node from the latest listing of the children that a call
// of this Backend made (an Acquire that found the lock held, usually),
// if that listing shows every node of the Backend's sessions on name, and
// the node is still there when the watch is set: one round trip. Else it
// lists the children first: two. After each signal it waits up to
// relistAfter for the receiver's Acquire or Holder to list the children
// again, and watches from that listing; else it lists them itself and
// signals once more (the receiver may have looked, through another
// Backend, before a change that listing shows).
//
// A hold ending, or a holder whose session or lease ran out while its
// process lives on, changes no node until someone looks: receivers must
// also poll. The channel is closed when ctx ends (once a request in flight
// returns), or when the watch breaks: the ZooKeeper session expired, the
// conn closed, or a new watch could not be set. One goroutine per Watch
// runs until then.
func (b *Backend) Watch(ctx context.Context, name string) (<-chan struct{}, error) {
	if err := validate.Name(name); err != nil {
		return nil, err
	}
	b.watching(name, true)
	ev, err := b.arm(ctx, name, true)
	if err != nil {
		b.watching(name, false)
		return nil, err
	}
	ch := make(chan struct{}, 1)
	go b.follow(ctx, name, ev, ch)
	return ch, nil
}

// follow forwards ZooKeeper watch events on name to ch, arming a new watch
// after each, until ctx ends or the watch breaks; then it closes ch. It
// waits in this frame, with one timer for all its waits: in a loop of
// contended runs each Watch's goroutine lives for one signal, and a wait
// three calls deeper made most of them grow their stack.
func (b *Backend) follow(ctx context.Context, name string, ev <-chan zk.Event, ch chan struct{}) {
	defer close(ch)
	defer b.watching(name, false)
	var relist *time.Timer // bounds the wait for the receiver's listing; made at the first signal
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-ev:
			if !ok || e.Type == zk.EventNotWatching {
				return
			}
		}
		_, gen, _ := b.latest(name)
		b.confirm(name, "")
		signal(ch)
		if listed := b.listingAfter(name, gen); listed != nil {
			if relist == nil {
				relist = time.NewTimer(relistAfter)
			} else {
				relist.Reset(relistAfter)
			}
			select {
			case <-listed:
			case <-relist.C:
			case <-ctx.Done():
				return
			}
			relist.Stop()
		}
		next, own, err := b.rearm(ctx, name, gen)
		if err != nil {
			return
		}
		if own {
			// The receiver may have looked through another Backend
			// before a change this listing shows: wake it again.
			signal(ch)
		}
		ev = next
	}
}

// signal sends on ch unless a signal is already pending: they coalesce.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// rearm sets the next watch on name after one fired, when the listing
// numbered gen was the latest and follow has waited up to relistAfter
// for the receiver's reaction: from the listing that reaction made, if
// one came, else from a listing of its own (own is true). A listing that
// shows a node of this Backend's at the head (its session is taking the
// lock) does not end that wait: the receiver, a waiter that has just won,
// usually ends the watch by then.
func (b *Backend) rearm(ctx context.Context, name string, gen uint64) (ev <-chan zk.Event, own bool, err error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	_, latest, ok := b.latest(name)
	fresh := ok && latest > gen
	ev, err = b.arm(ctx, name, fresh)
	return ev, !fresh, err
}

// arm sets one ZooKeeper watch on what decides name's holder next, from
// the latest listing of its children if fromLatest is set and there is
// one, else from a new one.
func (b *Backend) arm(ctx context.Context, name string, fromLatest bool) (<-chan zk.Event, error) {
	parent := b.lockPath(name)
	for round := range maxRounds {
		names, _, ok := b.latest(name)
		if round > 0 || !fromLatest || !ok {
			var err error
			names, ok, err = b.children(ctx, name, parent)
			if err != nil {
				return nil, err
			}
			if !ok {
				ev, ok, err := b.watchCreation(ctx, parent)
				if err != nil || ok {
					return ev, err
				}
				continue
			}
			b.listed(name, names)
		}
		node, of := b.target(name, names)
		ev, ok, err := b.watchNode(ctx, parent, node)
		if ok && of != "" && of != node {
			b.confirm(name, of)
		}
		if err != nil || ok {
			return ev, err
		}
	}
	return nil, fmt.Errorf("%w: zookeeper: lock %q changed %d times while we set a watch", backends.ErrUnavailable, name, maxRounds)
}

// watchCreation watches the creation of the missing parent; ok is false
// if it exists by now.
func (b *Backend) watchCreation(ctx context.Context, parent string) (<-chan zk.Event, bool, error) {
	var ev <-chan zk.Event
	var exists bool
	err := b.call(ctx, "watch", parent, func() error {
		var err error
		exists, _, ev, err = b.conn.ExistsW(parent)
		return err
	})
	if err != nil {
		return nil, false, fail(ctx, "watch "+parent, err)
	}
	return ev, !exists, nil
}

// watchNode watches child of parent, or parent's children if child is "";
// ok is false if the node is gone by now (GetW sets no watch then).
func (b *Backend) watchNode(ctx context.Context, parent, child string) (<-chan zk.Event, bool, error) {
	var ev <-chan zk.Event
	err := b.call(ctx, "watch", parent, func() error {
		var err error
		if child == "" {
			_, _, ev, err = b.conn.ChildrenW(parent)
		} else {
			_, _, ev, err = b.conn.GetW(parent + "/" + child)
		}
		return err
	})
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return nil, false, nil
	case err != nil:
		return nil, false, fail(ctx, "watch "+parent, err)
	}
	return ev, true, nil
}
