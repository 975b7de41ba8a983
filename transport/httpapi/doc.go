// Package httpapi serves a read-only view of campaigns and groups over HTTP:
// a JSON snapshot of each, and a Server-Sent Events stream of their events.
//
// # Read-only
//
// Everything it serves is observation, stale by the time it arrives. Nothing
// here can start, stop or resign a campaign, and no one should decide to act
// on what it shows: checking a snapshot and then acting is a race with the
// lease. Decide to run through the lock (the term's context, WhileLeader,
// RunIfLeader) and check fencing tokens where the work lands. Requests other
// than GET get 405 Method Not Allowed.
//
// # Routes
//
// Paths are relative to where the Handler is mounted (use http.StripPrefix).
//
//	GET /, GET /campaigns   JSON array of Snapshot, in registration order
//	GET /events             text/event-stream of Event, one SSE event each:
//	                        "event: elected\ndata: {json}\n\n"
//
// # Streams
//
// A stream subscribes (Subscribe) to every source registered when it starts;
// sources registered later join only streams that start later. Each
// subscription costs one goroutine of the source's and one of the Handler's
// (with one more per stream that closes the merged channel), all ended by the
// request's context; ServeHTTP owns its own and waits for them before it
// returns. A stream also ends once every subscription has closed (every
// source has ended), so closing the campaigns lets http.Server.Shutdown
// finish; with no source registered it ends at once. A slow client slows
// nobody: it receives the latest state of each source, not a backlog.
//
// # Concurrency
//
// A Handler is safe for concurrent use: Register, Unregister and ServeHTTP
// may be called from any goroutine, at any time.
package httpapi
