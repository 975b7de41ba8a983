package memberlist

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/hustings/hustings/internal/validate"
	"github.com/hustings/hustings/strategy"
)

// Members lists the candidates registered in group on the nodes this node
// sees alive (itself included), in join order: what gossip has reported so
// far, which may lag behind the other nodes, and list a node that crashed
// until the failure detector declares it dead. ID is the node's ID, Order
// its join order (see New). It returns ErrClosed after Close.
func (n *Node) Members(ctx context.Context, group string) ([]strategy.Candidate, error) {
	if err := validate.Name(group); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, ErrClosed
	}
	out := appendMember(nil, n.id, n.local, group)
	for id, e := range n.peers {
		out = appendMember(out, id, e, group)
	}
	slices.SortFunc(out, func(a, b strategy.Candidate) int {
		return cmp.Or(cmp.Compare(a.Order, b.Order), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

// appendMember appends node id's registration in group, if any.
func appendMember(out []strategy.Candidate, id string, e entry, group string) []strategy.Candidate {
	c, ok := e.groups[group]
	if !ok {
		return out
	}
	c.ID, c.Order, c.Meta = id, e.order, maps.Clone(c.Meta)
	return append(out, c)
}

// Register puts this node in group, or updates its entry there: Score,
// Weight and Meta are replaced; ID is the node's ID and Order its join
// order. c.ID must be empty or the node's ID: give a campaign that uses
// this node as its registry campaign.WithID(node.ID()). It returns the
// entry as stored once gossip has sent it, or once the broadcast timeout
// or ctx's deadline passed: the change is made either way and keeps
// spreading. Bad input returns an error matching ErrInvalid (and
// backends.ErrInvalid), an entry that would not fit with the node's others
// one matching ErrTooLarge: nothing is changed then. It may be called
// before Start, which sends the entry.
func (n *Node) Register(ctx context.Context, group string, c strategy.Candidate) (strategy.Candidate, error) {
	if c.ID != "" && c.ID != n.id {
		return strategy.Candidate{}, fmt.Errorf("%w: candidate ID %q is not the node's ID %q (use campaign.WithID(node.ID()))", ErrInvalid, c.ID, n.id)
	}
	if err := validate.Candidate(group, c); err != nil {
		return strategy.Candidate{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err := n.change(ctx, func(e entry) entry { return e.withGroup(group, c) }); err != nil {
		return strategy.Candidate{}, err
	}
	c.ID, c.Order, c.Meta = n.id, n.order, maps.Clone(c.Meta)
	return c, nil
}

// Deregister takes this node out of group; taking it out of a group it is
// not in is not an error. Like Register, it returns once gossip has sent
// the change. A group campaign does not deregister when it ends: call
// Deregister after its Run returns, or Close the node.
func (n *Node) Deregister(ctx context.Context, group string) error {
	if err := validate.Name(group); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return n.change(ctx, func(e entry) entry { return e.withoutGroup(group) })
}

// change applies f to the local entry, if the result fits, and gossips it.
func (n *Node) change(ctx context.Context, f func(entry) entry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return ErrClosed
	}
	next := f(n.local)
	meta := next.encode()
	if len(meta) > MaxMetaSize {
		n.mu.Unlock()
		return fmt.Errorf("%w: the node's entries would take %d bytes, more than %d", ErrTooLarge, len(meta), MaxMetaSize)
	}
	same := bytes.Equal(meta, n.meta)
	n.local, n.meta = next, meta
	n.mu.Unlock()
	if same {
		return nil
	}
	return n.publish(ctx)
}

// publish gossips the local entry (memberlist's UpdateNode) and waits for
// the broadcast to go out, bounded by the broadcast timeout and ctx's
// deadline. When the bound passes first it still returns nil: the entry is
// stored, queued, and spreads with later gossip and push-pulls. Before
// Start there is nothing to do: Start sends the entry.
func (n *Node) publish(ctx context.Context) error {
	n.life.Lock()
	defer n.life.Unlock()
	if err := n.usable(); err != nil {
		return err
	}
	if n.ml == nil {
		return nil
	}
	timeout := n.cfg.broadcast
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	// UpdateNode waits forever for a timeout ≤ 0.
	if err := n.ml.UpdateNode(max(timeout, time.Nanosecond)); err != nil {
		n.cfg.logger.Debug("memberlist: update not gossiped yet; it spreads later", "node", n.id, "err", err)
	}
	return nil
}
