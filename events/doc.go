// Package events holds the Event type that campaigns and observers
// publish, the fencing Token and the reasons a term is revoked.
//
// Channels of events (a campaign's Events and Subscribe, Observe's) are
// receive-only for their subscriber and are closed by their owner (the
// campaign or observer that publishes) when it ends, exactly once. A
// publisher never blocks on a subscriber: a subscriber that does not read
// is given the latest state when it does, and what it missed is counted
// (a campaign's State().Dropped).
//
// Guaranteed to every subscriber: events arrive in order; Elected for term
// t is followed by Revoked for term t before any later Elected; the last
// event received before the channel closes leaves no term open that the
// publisher still had open. Not guaranteed: that every event is seen (a
// term that began and ended between two reads is skipped entirely).
package events
