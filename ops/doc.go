// Package ops is what an operator of a replicated service needs from
// leader election, in the order they ask: is this replica healthy
// (Health, a /healthz handler and a probe function), who leads what
// (MasterStatus, the leader_election_master_status gauge that dashboards
// and alerts built for client-go and controller-runtime already use), how
// often it tries, wins and loses (Metrics, the hustings_* Prometheus
// counters) and what happened at 03:12 last night (WithTracerProvider,
// OpenTelemetry spans per term and per one-shot run).
//
// Each is opt-in, and given to campaign.New, group.New, campaign.NewSession,
// RunIfLeader or Every as an option; an option given where it means
// nothing (MasterStatus on a one-shot run, any of them on Observe) is
// refused with campaign.ErrInvalid. A program that imports only campaign
// and a backend links neither Prometheus nor OpenTelemetry: they come
// with this package.
//
// A campaign on a shared Session learns of its session's keep-alives
// through the Session: give WithHealth and WithTracerProvider to
// NewSession as well as to the campaigns, or keep-alive failures go
// unseen.
//
// The package is named for the work it serves, operations, rather than
// for one of its tools (health, metrics, traces), so that a newcomer
// looking for any of them finds all three in one place; it stands beside
// campaign and group, whose API it extends without adding to it, since
// it reaches the engine through internal/elector's hooks. It imports
// only OpenTelemetry's API (go.opentelemetry.io/otel/trace), never its
// SDK: the program chooses and configures the SDK.
//
// What is not guaranteed: Health sees only work bound to a term
// (WhileLeader, Every, RunIfLeader, work holding Campaign.Term), not work
// a program starts on its own from the Events channel; the spans are only
// as complete as the SDK's sampler and exporter make them.
//
// Everything here is safe for concurrent use and starts no goroutine. The
// hooks run in the campaigns' callbacks and take a mutex for a few map
// operations; tracing also starts and ends spans there, which is why
// WithTracerProvider asks for a batching span processor.
package ops
