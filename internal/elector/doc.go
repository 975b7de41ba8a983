// Package elector is the engine shared by package campaign (one lock) and
// package group (N slots): the actor that holds a session and a term,
// computes the local deadline and revokes at it, publishes events, and
// binds work to terms; one-shot locking for RunIfLeader; and the gate
// through which a strategy decides who tries for a slot.
//
// The actor is a state machine with no goroutine of its own: backend
// results, timers, watch signals and its session's renewals are callbacks
// that take its lock. Each backend call runs in a goroutine taken from its
// session's turns, one call at a time, so a hanging backend never holds up
// the deadline, the events or a stop, and a held campaign costs no
// goroutine. Every campaign runs on a session: the user's, or a private one
// made for it through the same code. What happens is told to its Hooks
// (tries, terms, keep-alives and runs, for package ops's metrics, health
// check, leader gauge and traces). Its doc for users
// is in package campaign; this package is internal so that its types can
// change.
package elector
