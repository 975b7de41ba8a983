// Package fanout is how publishers hand events to subscribers without
// ever waiting for them: Stream, one subscriber's coalescing channel,
// and Feed, which lets more subscribers join at any time, each through a
// Stream of its own. Package events documents what a subscriber sees.
//
// Stream's publishing methods belong to its one owner goroutine; C and
// Dropped are safe for concurrent use. A Feed is safe for concurrent use;
// each subscriber's Stream is owned by the goroutine running Feed.Forward
// for it, which closes it when the feed closes or the subscriber leaves.
package fanout
