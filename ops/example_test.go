package ops_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/ops"
)

// A leader whose work keeps to its term is healthy.
func ExampleHealth() {
	health, err := ops.NewHealth(10 * time.Second)
	if err != nil {
		panic(err)
	}
	c, err := campaign.New(memory.New(), "billing/reconcile", ops.WithHealth(health))
	if err != nil {
		panic(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	err = campaign.WhileLeader(ctx, c, func(ctx context.Context, term events.Event) error {
		rec := httptest.NewRecorder()
		health.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
		fmt.Print(rec.Code, " ", rec.Body.String())
		stop()
		<-ctx.Done() // the term ends with the campaign
		return nil
	})
	fmt.Println(err, health.Check(context.Background()))
	// Output:
	// 200 ok
	// context canceled <nil>
}

// The gauge client-go's dashboards read.
func ExampleNewMasterStatus() {
	reg := prometheus.NewRegistry()
	status, err := ops.NewMasterStatus(reg)
	if err != nil {
		panic(err)
	}
	c, err := campaign.New(memory.New(), "billing/reconcile", ops.WithMasterStatus(status))
	if err != nil {
		panic(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- c.Run(ctx) }()
	for e := range c.Events() {
		if e.Kind == events.Elected {
			break
		}
	}
	n, err := testutil.GatherAndCount(reg, "leader_election_master_status")
	if err != nil {
		panic(err)
	}
	fmt.Println(n, "series; leading:", leading(reg))
	stop()
	fmt.Println("Run:", <-done)
	fmt.Println("leading after the campaign ended:", leading(reg))
	// Output:
	// 1 series; leading: 1
	// Run: context canceled
	// leading after the campaign ended: 0
}

func leading(reg *prometheus.Registry) float64 {
	mfs, err := reg.Gather()
	if err != nil {
		panic(err)
	}
	return mfs[0].Metric[0].GetGauge().GetValue()
}

// A one-shot run's span, with its outcome.
func ExampleWithTracerProvider() {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	settle := func(ctx context.Context, token events.Token) (int, error) { return 42, nil }
	if _, err := campaign.RunIfLeader(context.Background(), memory.New(), "billing/nightly", settle, ops.WithTracerProvider(tp)); err != nil {
		panic(err)
	}
	for _, s := range exp.GetSpans() {
		for _, kv := range s.Attributes {
			if kv.Key == "hustings.outcome" {
				fmt.Println(s.Name, kv.Value.AsString())
			}
		}
	}
	if err := tp.Shutdown(context.Background()); err != nil { // after reading: it empties the exporter
		panic(err)
	}
	// Output: hustings.run succeeded
}
