package memberlist

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	hmemberlist "github.com/hashicorp/memberlist"
)

// Node is this process's member of the gossip cluster: it carries the
// process's group registrations and leadership announcements to the other
// nodes, and keeps what they announce. Its methods are safe for concurrent
// use.
type Node struct {
	id    string
	order uint64
	cfg   config

	// life serializes Start, Join, Close and every gossip of this node's
	// entry, so that a newer entry always gets the newer incarnation. It is
	// taken before mu, and held while memberlist runs, which may call the
	// delegates; the delegates take only mu.
	life sync.Mutex
	ml   *hmemberlist.Memberlist // under life; nil before Start and after Close

	mu     sync.Mutex
	local  entry            // this node's entry
	meta   []byte           // local, encoded
	peers  map[string]entry // the other live nodes' entries, by ID
	gen    uint64           // memberlist instance whose events count; see peerEvents
	addr   string           // host:port, set by Start
	closed bool
}

// lastOrder makes the join orders of the nodes of one process distinct.
var lastOrder atomic.Uint64

// New returns a node with the given ID, the candidate ID it registers and
// announces under. It validates the options and starts nothing: call
// Start.
//
// The node's join order, the Order of every registration it makes, is the
// time New was called in Unix nanoseconds (made distinct within the
// process). Orders of different hosts compare only as well as their clocks
// agree.
func New(id string, opts ...Option) (*Node, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	cfg := newConfig(opts)
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	n := &Node{id: id, order: nextOrder(), cfg: cfg, peers: map[string]entry{}}
	n.local = entry{order: n.order}
	n.meta = n.local.encode()
	return n, nil
}

func checkID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: empty node ID", ErrInvalid)
	case len(id) > 255 || !utf8.ValidString(id):
		return fmt.Errorf("%w: node ID %q must be valid UTF-8 of at most 255 bytes", ErrInvalid, id)
	}
	for _, r := range id {
		if unicode.IsControl(r) || unicode.IsSpace(r) {
			return fmt.Errorf("%w: node ID %q has a control or space character %U", ErrInvalid, id, r)
		}
	}
	return nil
}

func nextOrder() uint64 {
	for {
		last, now := lastOrder.Load(), uint64(time.Now().UnixNano())
		next := max(now, last+1)
		if lastOrder.CompareAndSwap(last, next) {
			return next
		}
	}
}

// ID returns the node's ID.
func (n *Node) ID() string { return n.id }

// Addr returns the address the node listens on, host:port, to give other
// nodes as a seed; "" before Start.
func (n *Node) Addr() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.addr
}

// Start binds the node's TCP and UDP listeners, starts memberlist, and
// joins the cluster through seeds (the Addr of other nodes); with no seeds
// the node starts a cluster of its own, which others may join. Entries
// registered and leaderships announced before Start go out with it.
//
// memberlist's goroutines run until Close. ctx is checked before each
// step; a join is bounded by the TCP timeout for each seed. When no seed
// answers Start returns an error matching ErrJoin, shuts memberlist down
// again, and may be called again. It returns ErrStarted on a started node
// and ErrClosed after Close.
func (n *Node) Start(ctx context.Context, seeds ...string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	n.life.Lock()
	defer n.life.Unlock()
	if err := n.usable(); err != nil {
		return err
	}
	if n.ml != nil {
		return ErrStarted
	}
	ml, err := hmemberlist.Create(n.cfg.memberlist(n.id, delegate{n}, peerEvents{n, n.reset()}))
	if err != nil {
		return fmt.Errorf("memberlist: start %s: %w", n.id, err)
	}
	local := ml.LocalNode() // nobody knows us yet: nothing writes it now
	addr := net.JoinHostPort(local.Addr.String(), strconv.Itoa(int(local.Port)))
	if len(seeds) > 0 {
		if err := join(ctx, ml, seeds); err != nil {
			ml.Shutdown()
			n.reset()
			return err
		}
	}
	n.ml = ml
	n.mu.Lock()
	n.addr = addr
	n.mu.Unlock()
	return nil
}

// Join contacts more seeds, for example to merge two clusters after a
// partition or to reach seeds that were down at Start. It returns an error
// matching ErrJoin when none answers, ErrNotStarted before Start and
// ErrClosed after Close.
func (n *Node) Join(ctx context.Context, seeds ...string) error {
	n.life.Lock()
	defer n.life.Unlock()
	if err := n.usable(); err != nil {
		return err
	}
	if n.ml == nil {
		return ErrNotStarted
	}
	return join(ctx, n.ml, seeds)
}

// join joins seeds; one answering seed is enough.
func join(ctx context.Context, ml *hmemberlist.Memberlist, seeds []string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(seeds) == 0 {
		return fmt.Errorf("%w: no seeds", ErrJoin)
	}
	if joined, err := ml.Join(seeds); joined == 0 {
		return fmt.Errorf("%w: none of %v answered: %w", ErrJoin, seeds, err)
	}
	return nil
}

// Close leaves the cluster, telling the others (bounded by the broadcast
// timeout; if the leave is not gossiped in time, the failure detector
// tells them later), and shuts memberlist down. Calling it again, or before
// Start, is fine; later calls of other methods return ErrClosed.
//
// memberlist does not wait for its own goroutines, and offers no way to: a
// failure-detector probe that was under way may run for up to its probe
// interval, scaled by memberlist's health awareness (at most 8×), after
// Close returns. It may still ping a peer; whatever it concludes is
// ignored by the Node (see peerEvents). Tests that check for leaked
// goroutines must wait for it: this package's TestMain polls goleak until
// it is gone, ignoring nothing.
func (n *Node) Close() error {
	n.life.Lock()
	defer n.life.Unlock()
	n.mu.Lock()
	already := n.closed
	n.closed = true
	n.mu.Unlock()
	if already || n.ml == nil {
		return nil
	}
	if err := n.ml.Leave(n.cfg.broadcast); err != nil {
		n.cfg.logger.Warn("memberlist: leave not gossiped in time; peers will notice the failure", "node", n.id, "err", err)
	}
	err := n.ml.Shutdown()
	n.ml = nil
	n.reset()
	return err
}

// usable returns ErrClosed after Close.
func (n *Node) usable() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return ErrClosed
	}
	return nil
}

// reset forgets the peers and starts a new generation of peer events:
// those of a memberlist shut down before (which may still come, see Close)
// are ignored from now on. It returns the new generation.
func (n *Node) reset() uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.peers = map[string]entry{}
	n.gen++
	return n.gen
}
