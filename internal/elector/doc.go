// Package elector is the engine shared by package campaign (one lock) and
// package group (N slots): the actor that holds a session and a term,
// computes the local deadline and revokes at it, publishes events, and
// binds work to terms; one-shot locking for RunIfLeader; and the gate
// through which a strategy decides who tries for a slot.
//
// The actor runs in Run's goroutine and hands each backend call to a
// goroutine it owns, one call at a time, so a hanging backend never holds up
// the deadline, the events or a stop. Its doc for users is in package
// campaign; this package is internal so that its types can change.
package elector
