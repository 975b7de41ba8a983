package zookeeper

import (
	"context"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/validate"
)

// Fence runs ops, as conn.Multi does, in one transaction with a
// check that the node of the term of name under token still exists: the
// lock child whose czxid is token, which must be the oldest child. The
// next term is granted only after that node is deleted (released,
// released with a hold, closed, found dead, or deleted by an operator),
// so ops committed here come before the next term begins, and a stale
// holder's ops are not applied at all.
//
// ops are *zk.CreateRequest, *zk.SetDataRequest, *zk.DeleteRequest or
// *zk.CheckVersionRequest; paths are the conn's, as in its own calls. It
// returns their responses, in order. A token whose node is not the oldest
// child now, a lock in a hold, and token 0 return an error matching
// backends.ErrNotHeld, and nothing is applied; so does a transaction the
// check fails in, because the node went meanwhile. If one of ops fails
// (zk.ErrNodeExists, zk.ErrBadVersion, ...), nothing is applied either:
// the error wraps zk's, and the responses say which op failed. Failures to
// reach the server match backends.ErrUnavailable; any other type of op
// returns backends.ErrInvalid.
//
// It costs two reads (the lock's children, the oldest one's stat) and
// the transaction. The check names the node by path and version, as
// ZooKeeper checks, not by czxid: a path comes back only if the lock's
// container node was deleted (a minute after its last child went) and the
// same session then took the lock again, so use the result right away.
func (b *Backend) Fence(ctx context.Context, name string, token events.Token, ops ...any) ([]zk.MultiResponse, error) {
	if err := validate.Name(name); err != nil {
		return nil, err
	}
	for i, op := range ops {
		switch op.(type) {
		case *zk.CreateRequest, *zk.SetDataRequest, *zk.DeleteRequest, *zk.CheckVersionRequest:
		default:
			return nil, fmt.Errorf("%w: zookeeper: fenced multi: op %d is a %T", backends.ErrInvalid, i, op)
		}
	}
	if token == 0 {
		return nil, fmt.Errorf("%w: %q under token 0", backends.ErrNotHeld, name)
	}
	check, err := b.fence(ctx, name, token)
	if err != nil {
		return nil, err
	}
	return b.fencedMulti(ctx, name, token, check, ops)
}

// fencedMulti runs check and ops in one transaction and translates its
// outcome.
func (b *Backend) fencedMulti(ctx context.Context, name string, token events.Token, check *zk.CheckVersionRequest, ops []any) ([]zk.MultiResponse, error) {
	var res []zk.MultiResponse
	err := b.call(ctx, "fenced multi", name, func() error {
		var err error
		res, err = b.conn.Multi(append([]any{check}, ops...)...)
		return err
	})
	switch {
	case err == nil:
		return res[1:], nil
	case len(res) != len(ops)+1: // no answer
		return nil, fail(ctx, "fenced multi "+name, err)
	case res[0].Error != nil:
		return nil, fmt.Errorf("%w: %q: the node of token %d went (%w)", backends.ErrNotHeld, name, token, res[0].Error)
	}
	return res[1:], fmt.Errorf("zookeeper: fenced multi for %q: %w", name, err)
}

// fence returns the check on the node of name's term under token: the
// oldest lock child, if its czxid is token and no hold marker is there.
// Every child older than a term's node was deleted before the term was
// granted (see walk), so while that node exists it is the oldest.
func (b *Backend) fence(ctx context.Context, name string, token events.Token) (*zk.CheckVersionRequest, error) {
	parent := b.lockPath(name)
	names, _, err := b.children(ctx, name, parent)
	if err != nil {
		return nil, err
	}
	kids, hold := queue(names)
	switch {
	case hold:
		return nil, fmt.Errorf("%w: %q is released with a hold, not held under token %d", backends.ErrNotHeld, name, token)
	case len(kids) == 0:
		return nil, fmt.Errorf("%w: %q is free, not held under token %d", backends.ErrNotHeld, name, token)
	}
	p := parent + "/" + kids[0].name
	var ok bool
	var st *zk.Stat
	err = b.call(ctx, "read", p, func() error {
		var err error
		ok, st, err = b.conn.Exists(p)
		return err
	})
	switch {
	case err != nil:
		return nil, fail(ctx, "read "+p, err)
	case !ok || events.Token(st.Czxid) != token:
		return nil, fmt.Errorf("%w: %q is no longer held under token %d", backends.ErrNotHeld, name, token)
	}
	return &zk.CheckVersionRequest{Path: p, Version: st.Version}, nil
}
