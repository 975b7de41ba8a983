package zookeeper

import (
	"context"
	"errors"
	"time"

	"github.com/go-zookeeper/zk"
)

// multi runs ops in one transaction, as the call op on object, headed by
// the session node's op: its creation while it is pending (Open makes no
// request, so no node of the session ever exists without it: others would
// judge it dead), or else, if renew, its renewal (a Set, which stamps its
// mtime). It returns the responses to ops alone, and whether this
// transaction created the session node.
//
// A creation that finds the node there (made by a call whose answer was
// lost, or by a concurrent first call) marks it made and runs again; one
// that finds root/sessions gone creates it and runs again. A renewal that
// finds the node gone loses the session.
func (s *session) multi(ctx context.Context, op, object string, renew bool, ops ...any) (res []zk.MultiResponse, created bool, err error) {
	for range 3 {
		head, creates := s.headOp(renew)
		all := ops
		if head != nil {
			all = append([]any{head}, ops...)
		}
		err = s.b.call(ctx, op, object, func() error {
			var err error
			res, err = s.b.conn.Multi(all...)
			return err
		})
		if head == nil {
			return res, false, err
		}
		var first error
		if len(res) > 0 {
			first, res = res[0].Error, res[1:]
		}
		switch {
		case err == nil:
			if creates {
				s.made()
			}
			return res, creates, nil
		case creates && errors.Is(first, zk.ErrNodeExists):
			s.made()
		case creates && errors.Is(first, zk.ErrNoNode):
			if err := s.b.ensure(ctx, s.b.sessionsPath(), false); err != nil {
				return nil, false, err
			}
		case errors.Is(first, zk.ErrNoNode):
			return nil, false, s.markLost(ctx, errors.New("its node is gone (expired)"))
		default:
			return res, false, err
		}
	}
	return res, false, err
}

// createIn runs, as multi does, the transaction of create, which makes a
// node under parent, and a write of parent, whose new stat the second
// response carries. If parent is missing it makes it (a container) and
// runs the transaction again. sent is when the transaction that answered
// was sent, for a sample of the server's clock.
func (s *session) createIn(ctx context.Context, op, object, parent string, create *zk.CreateRequest) (res []zk.MultiResponse, created bool, sent time.Time, err error) {
	stamp := &zk.SetDataRequest{Path: parent, Version: -1}
	sent = time.Now()
	res, created, err = s.multi(ctx, op, object, false, create, stamp)
	if !errors.Is(err, zk.ErrNoNode) {
		return res, created, sent, err
	}
	// Nothing was applied, the session node's creation included.
	if err := s.b.ensure(ctx, parent, true); err != nil {
		return nil, false, sent, err
	}
	sent = time.Now()
	res, created, err = s.multi(ctx, op, object, false, create, stamp)
	return res, created, sent, err
}

// headOp returns the session node's op that heads a transaction of s (see
// multi), and whether it creates the node; nil if it needs none. It
// decides under s.mu, once: a renewal is a Set only of a node known to
// exist, and a creation stamps the node's mtime as a Set would.
func (s *session) headOp(renew bool) (op any, creates bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.pending:
		return &zk.CreateRequest{Path: s.path, Data: s.data, Acl: s.b.acl, Flags: zk.FlagEphemeral}, true
	case renew:
		return &zk.SetDataRequest{Path: s.path, Data: s.data, Version: -1}, false
	}
	return nil, false
}

// made records that the session node exists.
func (s *session) made() {
	s.mu.Lock()
	s.pending = false
	s.mu.Unlock()
}
