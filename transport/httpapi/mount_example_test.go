package httpapi_test

import (
	"context"
	"log"
	"net/http"

	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/transport/httpapi"
)

// The handler mounted on a server's mux, with its history recorded.
// docs/operating.md shows this Example; it is compiled, not run.
func Example_mount() {
	ctx := context.Background()
	c, err := campaign.New(memory.New(), "billing/reconcile")
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	h := httpapi.New()
	h.Register(c) // every campaign and group to show
	go h.Run(ctx) // optional: records the last 5 minutes for GET /history, so a page opened late shows them
	mux.Handle("/hustings/", http.StripPrefix("/hustings", h))
	log.Fatal(http.ListenAndServe(":8080", mux))
}
