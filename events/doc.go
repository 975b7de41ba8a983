// Package events holds the Event type that campaigns and observers publish,
// the fencing Token, the reasons a term is revoked, Stream, the coalescing,
// non-blocking channel every publisher uses, and Feed, which lets more
// subscribers join at any time, each through a Stream of its own.
//
// Channels: a Stream's channel is receive-only for its subscriber and is
// closed by the stream's owner (the campaign or observer loop that
// publishes) when it ends, exactly once. A publisher never blocks on a
// subscriber: a subscriber that does not read is given the latest state
// when it does, and what it missed is counted in Stream.Dropped.
//
// Guaranteed to every subscriber: events arrive in order; Elected for term
// t is followed by Revoked for term t before any later Elected; the last
// event received before the channel closes leaves no term open that the
// publisher still had open. Not guaranteed: that every event is seen (a
// term that began and ended between two reads is skipped entirely).
//
// Stream's publishing methods belong to its one owner goroutine; C and
// Dropped are safe for concurrent use. A Feed is safe for concurrent use;
// each subscriber's Stream is owned by the goroutine running Feed.Forward
// for it, which closes it when the feed closes or the subscriber leaves.
package events
