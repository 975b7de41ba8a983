package ops_test

import (
	"context"
	"log"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/ops"
)

// The examples of docs/operating.md; they are compiled, not run (they
// serve on the default mux).

// A health check on /healthz for a reconcile loop.
func ExampleHealth_handler() {
	ctx := context.Background()
	b := memory.New()
	reconcile := func(ctx context.Context, term events.Event) error { <-ctx.Done(); return nil }
	health, err := ops.NewHealth(10 * time.Second) // the grace: at least campaign.WithGrace
	if err != nil {
		log.Fatal(err)
	}
	c, err := campaign.New(b, "billing/reconcile", ops.WithHealth(health))
	if err != nil {
		log.Fatal(err)
	}
	http.Handle("/healthz", health) // or call health.Check(ctx) from your own probe
	err = campaign.WhileLeader(ctx, c, reconcile)
	log.Print(err)
}

// The hustings_* metrics and client-go's leader gauge on one registry.
func ExampleMetrics() {
	b := memory.New()
	reg := prometheus.NewRegistry()
	m, err := ops.NewMetrics(reg)
	if err != nil {
		log.Fatal(err)
	}
	status, err := ops.NewMasterStatus(reg)
	if err != nil {
		log.Fatal(err)
	}
	c, err := campaign.New(b, "billing/reconcile", ops.WithMetrics(m), ops.WithMasterStatus(status))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
}

// Spans of a campaign's terms and of a one-shot run.
func ExampleWithTracerProvider_campaign() {
	ctx := context.Background()
	b := memory.New()
	exporter := tracetest.NewInMemoryExporter()
	settle := func(ctx context.Context, token events.Token) (int, error) { return 0, nil }
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter)) // your SDK setup
	defer tp.Shutdown(context.Background())
	c, err := campaign.New(b, "billing/reconcile", ops.WithTracerProvider(tp))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	res, err := campaign.RunIfLeader(ctx, b, "billing/nightly", settle, ops.WithTracerProvider(tp))
	log.Print(res.Outcome, err)
}
