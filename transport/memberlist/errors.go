package memberlist

import "errors"

// Errors of this package; match them with errors.Is. Bad input to Register
// also matches backends.ErrInvalid.
var (
	// ErrClosed: the node was closed.
	ErrClosed = errors.New("memberlist: closed")
	// ErrInvalid: bad configuration or input, rejected before anything
	// changes.
	ErrInvalid = errors.New("memberlist: invalid")
	// ErrTooLarge: the node's entries (every group registration and every
	// announced leadership) would not fit in memberlist's node metadata
	// (MaxMetaSize bytes); nothing was changed.
	ErrTooLarge = errors.New("memberlist: node metadata too large")
	// ErrStarted: Start was called on a node that is already started.
	ErrStarted = errors.New("memberlist: already started")
	// ErrNotStarted: Join was called on a node that was not started.
	ErrNotStarted = errors.New("memberlist: not started")
	// ErrJoin: no seed could be reached.
	ErrJoin = errors.New("memberlist: join failed")

	// errCorrupt: a peer's metadata could not be read; its entries are
	// ignored until it sends readable ones.
	errCorrupt = errors.New("memberlist: corrupt node metadata")
)
