package memberlist

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/validate"
)

// Leader is one leadership a node announced, as gossip reported it.
type Leader struct {
	// Node is the ID of the announcing node.
	Node string
	// Slot is the slot held; 0 for a single lock.
	Slot int
	// Token is the fencing token of the term.
	Token events.Token
}

// Announce tells the other nodes that this node holds the lock name (the
// full name, prefix included, as in events.Event.Name) in slot, with token.
// A node has at most one claim per name: a new one replaces the old. It
// returns once gossip has sent it (see Register), ErrInvalid for a bad name
// or a negative slot, ErrTooLarge when the claim would not fit with the
// node's other entries, and ErrClosed after Close.
//
// The announcement is news, not a lock: it is only as fresh as gossip,
// and a node that crashed keeps its claims until the failure detector
// declares it dead. Never decide to act on it; the fencing token tells a
// stale claim from a newer one.
func (n *Node) Announce(ctx context.Context, name string, slot int, token events.Token) error {
	if err := validate.Name(name); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if slot < 0 {
		return fmt.Errorf("%w: slot %d must be ≥ 0", ErrInvalid, slot)
	}
	return n.change(ctx, func(e entry) entry { return e.withClaim(name, claim{slot: slot, token: token}) })
}

// Withdraw takes back this node's claim on name, if its token matches (0
// matches any claim), and gossips that as Announce does. Withdrawing a
// claim that is not there is not an error.
func (n *Node) Withdraw(ctx context.Context, name string, token events.Token) error {
	if err := validate.Name(name); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return n.change(ctx, func(e entry) entry {
		if c, ok := e.claims[name]; ok && (token == 0 || c.token == token) {
			return e.withoutClaim(name)
		}
		return e
	})
}

// Leaders returns the claims on name of the nodes this node sees alive,
// itself included, by slot and, within a slot, newest token first. Under a
// handover or a stale view two nodes may claim one slot: the higher token
// is the newer term. nil after Close.
func (n *Node) Leaders(name string) []Leader {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil
	}
	out := appendLeader(nil, n.id, n.local, name)
	for id, e := range n.peers {
		out = appendLeader(out, id, e, name)
	}
	slices.SortFunc(out, func(a, b Leader) int {
		return cmp.Or(cmp.Compare(a.Slot, b.Slot), cmp.Compare(b.Token, a.Token), cmp.Compare(a.Node, b.Node))
	})
	return out
}

func appendLeader(out []Leader, id string, e entry, name string) []Leader {
	if c, ok := e.claims[name]; ok {
		out = append(out, Leader{Node: id, Slot: c.slot, Token: c.token})
	}
	return out
}

// Track announces the terms reported on ch, a channel of a campaign's or a
// group's events (Events, or Subscribe), until ch is closed or ctx ends:
// Elected announces the term, Revoked withdraws it; other kinds are
// ignored. It blocks, and returns nil when ch is closed, ctx.Err() when
// ctx ends, or the first error of Announce or Withdraw (ErrTooLarge,
// ErrClosed). On the way out it withdraws what it announced and was not
// revoked. Claims are made in this node's name, whatever the events'
// Holder.
func (n *Node) Track(ctx context.Context, ch <-chan events.Event) error {
	held := map[string]events.Token{}
	defer n.withdrawAll(context.WithoutCancel(ctx), held)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case e, ok := <-ch:
			if !ok {
				return nil
			}
			if err := n.track(ctx, e, held); err != nil {
				return err
			}
		}
	}
}

// track applies one event; held records the claims in force.
func (n *Node) track(ctx context.Context, e events.Event, held map[string]events.Token) error {
	switch e.Kind {
	case events.Elected:
		if err := n.Announce(ctx, e.Name, e.Slot, e.Token); err != nil {
			return err
		}
		held[e.Name] = e.Token
	case events.Revoked:
		if err := n.Withdraw(ctx, e.Name, e.Token); err != nil {
			return err // withdrawAll tries again
		}
		delete(held, e.Name)
	}
	return nil
}

// withdrawAll withdraws the claims Track left, as far as it can.
func (n *Node) withdrawAll(ctx context.Context, held map[string]events.Token) {
	for name, token := range held {
		if err := n.Withdraw(ctx, name, token); err != nil {
			n.cfg.logger.Debug("memberlist: claim not withdrawn", "node", n.id, "name", name, "err", err)
		}
	}
}
