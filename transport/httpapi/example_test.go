package httpapi_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/transport/httpapi"
)

func Example() {
	c, err := campaign.New(memory.New(), "nightly", campaign.WithID("node-1"))
	if err != nil {
		panic(err)
	}
	defer func() {
		if err := c.Close(); err != nil {
			panic(err)
		}
	}()

	h := httpapi.New()
	h.Register(c)
	// Mounted under a prefix, as it would be on a server's mux.
	mux := http.NewServeMux()
	mux.Handle("/hustings/", http.StripPrefix("/hustings", h))

	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/hustings/campaigns", nil))
	fmt.Print(rec.Body)
	// Output:
	// [{"name":"nightly","id":"node-1","leader":false,"slot":0,"token":0,"dropped":0}]
}
