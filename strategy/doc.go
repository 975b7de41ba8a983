// Package strategy ranks a group's candidates: FIFO (registration order),
// Random and Weighted (rendezvous hashing), and Score (highest first).
//
// Rankings are pure and deterministic: the same list, group and epoch give
// the same order on every node, so nodes agree on who should hold a
// group's slots without talking. They decide preference only. Safety, at
// most N holders, comes from the slot locks of package group, never from a
// ranking: two nodes that see different candidate lists (a registry read
// at different moments, a gossip partition) may prefer different winners,
// and the locks still let only N win.
//
// Everything here is safe for concurrent use; nothing blocks or starts
// goroutines.
package strategy
