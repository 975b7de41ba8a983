// Package group runs group campaigns: N slots for one name, so that some
// work runs on at most N replicas at once (tenant roll-ups, partitioned
// pollers), each slot its own lock with its own fencing token.
//
// New returns a campaign.Campaign (same options, events, Term, Resign,
// Close, campaign.WhileLeader) that holds one of the group's slots, and
// whose events and State carry the slot number; RunIfLeader is the
// one-shot form. A candidate holds at most one slot of a group. Safety,
// at most N holders at any moment, comes from the slot locks alone; a
// candidate tries the slots from one that depends on its ID, so
// candidates spread over them, and a freed slot is refilled as fast as a
// single lock: the backend wakes the waiters, and a waiter that found
// every slot held and is woken asks first, and only, for the slots whose
// watch signalled. On backends that queue waiters (ZooKeeper) a waiter
// stands in the line of every slot; once elected to one it leaves the
// others, after its Elected, not before.
//
// # Strategies
//
// Without a strategy, any candidate takes any free slot. WithStrategy makes
// the group prefer candidates by a ranking of package strategy (FIFO,
// random, score, weighted) over the group's registered candidates (the
// backend's registry, or WithRegistry's): only those ranked within the top
// N try for a slot at once; the others take a slot only once it has stayed
// free for the patience period, so a preferred candidate that is slow or
// gone never blocks a slot (liveness beats preference). With
// WithPreemption, a holder out-ranked by a candidate without a slot gives
// its slot up after the hysteresis period, at a safe point: the term's
// context is cancelled and the slot released once the work bound to it
// returned. SetScore changes this candidate's score as it runs.
//
// Rankings decide preference only. The slot locks alone keep the holders to
// N, so two nodes that read the registry at different moments may disagree
// on who should lead without ever making N+1 leaders.
//
// The epoch that random and weighted rankings hash advances with
// WithRotation (on each node's clock), not when a slot changes hands: an
// epoch that moved with every handover would, with preemption, move slots
// on forever.
//
// Channels, blocking and concurrency are as in package campaign: Events is
// closed by Run when it returns, every method is safe for concurrent use,
// and Run owns every goroutine it starts (a watch over several slots adds
// one goroutine per slot while the group waits for one).
//
// docs/groups.md in the repository walks through slots, strategies and
// registries with examples.
package group
