// Package httpapi serves a read-only view of campaigns and groups over HTTP:
// a JSON snapshot of each, a Server-Sent Events stream of their events, and
// a live page that shows both to a person.
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
//	GET /                   the live page for a browser, JSON for anyone else
//	GET /campaigns          JSON array of campaigns, in registration order
//	GET /events             text/event-stream of events, one SSE event each:
//	                        "event: elected\ndata: {json}\n\n"
//	GET /history            JSON array of events: what Run recorded, oldest
//	                        first; empty without Run
//
// A campaign is {"name", "id", "leader", "slot", "token", "holder",
// "deadline", "last_event", "dropped", "error"}: campaign.State, with the
// holder this campaign knows of (itself while it leads) and the last
// backend error's text. An event is {"kind", "name", "slot", "token",
// "holder", "time", "deadline", "reason"}: events.Event, with the kind in
// lower case ("elected", "revoked", "leader-changed") and the revocation
// reason's text. Times are RFC 3339 with nanoseconds; empty strings, zero
// times and a missing last event are omitted.
//
// # The live page
//
// GET / is negotiated on the Accept header rather than given a path of its
// own, so that the address that answers JSON is the one a person opens: a
// request that names text/html with a higher quality than application/json
// (a browser's navigation) gets an HTML page; any other (application/json,
// */* as curl sends, no Accept at all) gets the JSON snapshot, as before the
// page existed. Responses to / carry "Vary: Accept"; /campaigns is JSON
// whatever the request accepts.
//
// The page is embedded in the binary: one HTML file with its style and
// script inline, no build step, nothing fetched from elsewhere (its
// Content-Security-Policy allows its own origin only), so it works offline.
// It shows every registered campaign and group by lock name: the holder of
// each lock and slot with its token and a countdown to the term's local
// deadline; the candidates registered here, leading or waiting; and the
// terms of the last five minutes, on a timeline and in a table, each with
// the reason it ended. It begins with GET /history, then follows GET
// /events with an EventSource, and reads /campaigns once a second for what events do not
// carry (candidates that never led, deadlines moved on by keep-alives,
// sources registered after its stream began, for which it reopens the
// stream). Countdowns are on the browser's clock: they are right to within
// the skew between the browser's and the server's clocks. A term that began
// before what the page has of it shows as begun "before this page".
//
// # History
//
// Run records the events of every registered source (those registered
// while it runs too) for GET /history: the last five minutes, at most 4096
// events, each once. It costs one goroutine per source, ended with Run's
// context, and Run waits for them. Without Run, the page knows only what
// happens while it is open.
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
// A Handler is safe for concurrent use: Register, Unregister, Run and
// ServeHTTP may be called from any goroutine, at any time.
package httpapi
