package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hustings/hustings/backends"
)

// call runs f, which makes go-zookeeper requests, unless ctx is already
// done or the conn has no session (disconnected, connecting, expired or
// closed): then it returns an error matching backends.ErrUnavailable at
// once, so that nothing succeeds from stale state and no request waits in
// go-zookeeper's queue for a reconnect. go-zookeeper takes no context: a
// request in flight when the link goes silent returns when go-zookeeper
// gives up on the connection, two thirds of the session timeout after it
// last heard from the server. f's errors are returned as they are. The
// call is named by op and its object (see what), joined only for an
// error: most calls return none.
func (b *Backend) call(ctx context.Context, op, object string, f func() error) error {
	if err := b.ready(ctx, op, object); err != nil {
		return err
	}
	if b.onCall != nil {
		b.onCall(what(op, object))
	}
	return f()
}

// ready returns an error matching backends.ErrUnavailable if ctx is done
// or the conn has no session, naming the call op on object.
func (b *Backend) ready(ctx context.Context, op, object string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: zookeeper: %s: %w", backends.ErrUnavailable, what(op, object), err)
	}
	if st := b.conn.State(); st != zk.StateHasSession {
		return fmt.Errorf("%w: zookeeper: %s: connection has no session (%v)", backends.ErrUnavailable, what(op, object), st)
	}
	return nil
}

// what names a call: its op and the object it acts on, if any.
func what(op, object string) string {
	if object == "" {
		return op
	}
	return op + " " + object
}

// fail translates err, which the caller does not handle itself, into the
// errors of package backends: an expired ZooKeeper session loses every
// session of the conn; anything else is a failure to answer. If ctx ended
// meanwhile, its error is wrapped too.
func fail(ctx context.Context, what string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, backends.ErrUnavailable), errors.Is(err, backends.ErrSessionLost),
		errors.Is(err, backends.ErrSessionClosed), errors.Is(err, backends.ErrHeld),
		errors.Is(err, backends.ErrNotHeld), errors.Is(err, backends.ErrInvalid):
		return err
	case errors.Is(err, zk.ErrSessionExpired):
		return fmt.Errorf("%w: zookeeper: %s: %w", backends.ErrSessionLost, what, err)
	}
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("%w: zookeeper: %s: %w: %w", backends.ErrUnavailable, what, err, cerr)
	}
	return fmt.Errorf("%w: zookeeper: %s: %w", backends.ErrUnavailable, what, err)
}

// ensure creates the node p, and its missing ancestors, as persistent
// nodes (p itself as a container if container is set, which the server
// deletes some time after its last child). A node already there is fine.
func (b *Backend) ensure(ctx context.Context, p string, container bool) error {
	create := func() error {
		var err error
		if container {
			_, err = b.conn.CreateContainer(p, nil, zk.FlagContainer, b.acl)
		} else {
			_, err = b.conn.Create(p, nil, 0, b.acl)
		}
		return err
	}
	err := b.call(ctx, "create", p, create)
	if errors.Is(err, zk.ErrNoNode) {
		if err := b.ensure(ctx, path.Dir(p), false); err != nil {
			return err
		}
		err = b.call(ctx, "create", p, create)
	}
	if err == nil || errors.Is(err, zk.ErrNodeExists) {
		return nil
	}
	return fail(ctx, "create "+p, err)
}

// now returns the server's clock, in ms since the epoch, by writing the
// (empty) data of the lock's parent node p: the one clock every candidate
// shares, and the one node expiries are stamped with.
func (b *Backend) now(ctx context.Context, p string) (int64, error) {
	var st *zk.Stat
	sent := time.Now()
	err := b.call(ctx, "read the server clock", "", func() error {
		var err error
		st, err = b.conn.Set(p, nil, -1)
		return err
	})
	if err != nil {
		return 0, err
	}
	b.clock.sample(st.Mtime, sent)
	return st.Mtime, nil
}

// children lists the children of path, as the call "list "+name; a path
// that does not exist has none (found is false).
func (b *Backend) children(ctx context.Context, name, path string) (names []string, found bool, err error) {
	err = b.call(ctx, "list", name, func() error {
		var err error
		names, _, err = b.conn.Children(path)
		return err
	})
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return nil, false, nil
	case err != nil:
		return nil, false, fail(ctx, "list "+name, err)
	}
	return names, true, nil
}
