package zookeeper

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/internal/validate"
)

// Watch returns a channel that receives a value (coalesced, buffer of one)
// when the node it watches changes: the predecessor of the oldest node
// that a session of this Backend has queued on name, else the oldest child
// (the holder), else the hold marker; with no child, the children of the
// lock's parent; with no parent, its creation. So each waiter is woken by
// its predecessor only, not by every change (no herd effect). After each
// signal it watches again, one round trip or two.
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
	ev, err := b.arm(ctx, name)
	if err != nil {
		return nil, err
	}
	ch := make(chan struct{}, 1)
	go b.follow(ctx, name, ev, ch)
	return ch, nil
}

// follow forwards ZooKeeper watch events on name to ch, arming a new watch
// after each, until ctx ends or the watch breaks; then it closes ch.
func (b *Backend) follow(ctx context.Context, name string, ev <-chan zk.Event, ch chan struct{}) {
	defer close(ch)
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-ev:
			if !ok || e.Type == zk.EventNotWatching {
				return
			}
			select {
			case ch <- struct{}{}:
			default: // a signal is already pending; they coalesce
			}
		}
		next, err := b.arm(ctx, name)
		if err != nil {
			return
		}
		ev = next
	}
}

// arm sets one ZooKeeper watch on what decides name's holder next.
func (b *Backend) arm(ctx context.Context, name string) (<-chan zk.Event, error) {
	parent := b.lockPath(name)
	for range maxRounds {
		var names []string
		err := b.call(ctx, "watch "+name, func() error {
			var err error
			names, _, err = b.conn.Children(parent)
			return err
		})
		if errors.Is(err, zk.ErrNoNode) {
			ev, ok, err := b.watchCreation(ctx, parent)
			if err != nil || ok {
				return ev, err
			}
			continue
		}
		if err != nil {
			return nil, fail(ctx, "watch "+name, err)
		}
		ev, ok, err := b.watchNode(ctx, parent, b.target(name, names))
		if err != nil || ok {
			return ev, err
		}
	}
	return nil, fmt.Errorf("%w: zookeeper: lock %q changed %d times while we set a watch", backends.ErrUnavailable, name, maxRounds)
}

// target picks the child of name to watch from its children's names: ""
// for none.
func (b *Backend) target(name string, names []string) string {
	kids, hold := queue(names)
	switch {
	case hold:
		return holdNode
	case len(kids) == 0:
		return ""
	}
	for i := 1; i < len(kids); i++ {
		if b.tracked(name, kids[i].name) {
			return kids[i-1].name
		}
	}
	return kids[0].name
}

// watchCreation watches the creation of the missing parent; ok is false
// if it exists by now.
func (b *Backend) watchCreation(ctx context.Context, parent string) (<-chan zk.Event, bool, error) {
	var ev <-chan zk.Event
	var exists bool
	err := b.call(ctx, "watch "+parent, func() error {
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
	err := b.call(ctx, "watch "+parent, func() error {
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
