// Package memberlist lets candidates find each other, and see who leads
// what, by gossip (hashicorp/memberlist), without asking the backend: a
// Node is this process's member of the cluster, a candidate registry for
// the strategies of package group (group.WithRegistry), and a view of the
// leaderships every node announces (Announce, Track, Leaders).
//
// # Lifecycle
//
// New validates and starts nothing. Start binds the listeners, starts
// memberlist's goroutines and joins the seeds (other nodes' Addr); Close
// leaves the cluster (bounded) and shuts them down. The Node starts no
// goroutine of its own; Track runs in its caller's. Close is idempotent;
// afterwards every method returns ErrClosed (Leaders returns nil).
// memberlist does not wait for its own goroutines: a probe under way when
// Close is called may finish up to a few probe intervals later (see
// Node.Close); this package's tests wait for it before checking for leaks.
//
// # What travels
//
// Each node gossips one entry, in memberlist's node metadata: its join
// order, its registration (score, weight, metadata) in each group, and
// its leadership claims (slot and fencing token by lock name). The whole
// entry must fit in MaxMetaSize (512) bytes, in a compact binary encoding:
// a change that would not fit is refused with ErrTooLarge, never cut. A
// group registration without metadata takes 18 bytes plus its name, a
// claim 3 to 12 bytes plus the lock name: a node fits a dozen or more of
// each, not hundreds. Node metadata rides memberlist's own
// machinery: newer versions win by incarnation number, push-pull repairs
// lost updates, and a node's entry goes when the node does.
//
// # What is guaranteed, and what is not
//
// Gossip is eventually consistent and makes no decisions:
//
//   - No consensus. Two nodes may see different lists at the same moment;
//     a change reaches the others within a few gossip intervals when the
//     network is good, and at the next push-pull at worst.
//   - Partitions. Each side of a partition sees only itself after the
//     failure detector runs, and may rank a different top N. The slot
//     locks of the backend alone keep the holders to N: the registry only
//     says whom a group prefers, and a wrong preference costs time (the
//     patience period), never safety. Once the partition heals, memberlist
//     alone may not merge the sides again (it gossips to nodes it declared
//     dead only for 30 s, and only when it has news): call Join with seeds
//     from the other side, for example every so often with the seeds the
//     node started with.
//   - Failures take time. A node that crashes (no Close) stays listed, with
//     its registrations and claims, until the failure detector declares it
//     dead: a few probe intervals, more in larger clusters. Close tells the
//     others at once.
//   - Claims are news, not locks. Leaders shows what nodes announced, as
//     fresh as gossip; two nodes may claim one slot for a while, and the
//     higher fencing token is the newer term. Work must be bound to the
//     term of a campaign, never to what Leaders shows.
//   - Join order is a clock reading: the time New was called, in Unix
//     nanoseconds. FIFO across hosts is only as fair as their clocks agree,
//     and a node that restarts joins again at the back.
//
// # Use with group
//
// A group campaign registers its candidate with the Node passed to
// group.WithRegistry under its candidate ID, which must be the node's ID
// (campaign.WithID(node.ID())). It does not deregister when it ends: call
// Deregister after its Run returns, or Close the node. A node keeps one
// registration per group and one claim per lock name.
//
// # Concurrency
//
// Every method of Node is safe for concurrent use. Register, Deregister,
// Announce and Withdraw block until the change is gossiped, bounded by the
// broadcast timeout and ctx's deadline; Start and Join block for the join
// (bounded by the TCP timeout per seed); Close for the leave (bounded);
// Members and Leaders never block. memberlist calls the Node's delegates
// from its own goroutines: they take the Node's lock briefly and never
// call memberlist back (see delegate.go).
package memberlist
