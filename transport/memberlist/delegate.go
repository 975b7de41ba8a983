package memberlist

import (
	"bytes"

	hmemberlist "github.com/hashicorp/memberlist"
)

// delegate hands memberlist this node's metadata. memberlist calls its
// methods from its own goroutines, concurrently with each other and with
// the Node's methods, sometimes while holding its node lock: so each takes
// only the Node's mu, briefly, and never calls back into memberlist.
type delegate struct {
	n *Node
}

// NodeMeta returns the node's encoded entry. memberlist calls it when it
// creates the node, on UpdateNode, and when it refutes a suspicion of this
// node. Register and Announce keep the entry within MaxMetaSize, so the
// limit is never hit; were it hit, no metadata is better than memberlist's
// panic.
func (d delegate) NodeMeta(limit int) []byte {
	d.n.mu.Lock()
	defer d.n.mu.Unlock()
	if len(d.n.meta) > limit {
		return nil
	}
	return bytes.Clone(d.n.meta)
}

// NotifyMsg receives user messages; this package sends none. memberlist
// calls it from its packet loop, which it must not block.
func (delegate) NotifyMsg([]byte) {}

// GetBroadcasts returns user broadcasts; this package has none.
func (delegate) GetBroadcasts(overhead, limit int) [][]byte { return nil }

// LocalState returns state for a TCP push-pull beyond the node list; the
// entries travel in the node metadata, which push-pull already carries.
func (delegate) LocalState(join bool) []byte { return nil }

// MergeRemoteState merges what a peer's LocalState sent: nothing.
func (delegate) MergeRemoteState(buf []byte, join bool) {}

// peerEvents keeps the Node's view of its peers' entries. memberlist calls
// its methods one at a time (never concurrently), in the order of the
// changes it applies, while holding its node lock: each takes only the
// Node's mu, briefly, and never calls back into memberlist. Events of a
// memberlist instance the Node has shut down (gen is not the Node's) are
// ignored.
type peerEvents struct {
	n   *Node
	gen uint64
}

// NotifyJoin is called when a node joins or comes back.
func (p peerEvents) NotifyJoin(node *hmemberlist.Node) { p.see(node) }

// NotifyUpdate is called when a node's metadata changes.
func (p peerEvents) NotifyUpdate(node *hmemberlist.Node) { p.see(node) }

// NotifyLeave is called when a node leaves or the failure detector
// declares it dead.
func (p peerEvents) NotifyLeave(node *hmemberlist.Node) {
	n := p.n
	n.mu.Lock()
	defer n.mu.Unlock()
	if p.gen == n.gen {
		delete(n.peers, node.Name)
	}
}

// see records a peer's entry. memberlist owns node: its Meta is read here,
// under memberlist's lock, and not kept. A peer whose metadata cannot be
// read is listed with no entries.
func (p peerEvents) see(node *hmemberlist.Node) {
	n := p.n
	if node.Name == n.id {
		return // our own entry is n.local
	}
	var e entry
	if len(node.Meta) > 0 {
		var err error
		if e, err = decodeEntry(node.Meta); err != nil {
			n.cfg.logger.Warn("memberlist: ignoring a peer's entries", "node", n.id, "peer", node.Name, "err", err)
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if p.gen == n.gen && !n.closed {
		n.peers[node.Name] = e
	}
}
