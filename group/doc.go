// Package group runs group campaigns: N slots for one name, so that some
// work runs on at most N replicas at once (tenant roll-ups, partitioned
// pollers), each slot its own lock with its own fencing token.
//
// A Group behaves like a campaign.Campaign (same options, events, Term,
// Resign, Close, WhileLeader and RunIfLeader), except that it holds one of
// the group's slots, and its events carry the slot number. A candidate
// holds at most one slot of a group. Safety, at most N holders at any
// moment, comes from the slot locks alone; a candidate tries the slots
// from one that depends on its ID, so candidates spread over them, and a
// freed slot is refilled as fast as a single lock (the backend wakes
// waiters).
//
// Channels, blocking and concurrency are as in package campaign: Events is
// closed by Run when it returns, every method is safe for concurrent use,
// and Run owns every goroutine it starts (a watch over several slots adds
// one goroutine per slot while the group waits for one).
package group
