package mongodb_test

import (
	"testing"

	"github.com/hustings/hustings/backends/mongodb"
	"github.com/hustings/hustings/backends/mongodb/mongotest"
)

// TestEnsureIndexesIsIdempotent: EnsureIndexes runs again over the
// indexes it made (FerretDB dropped the connection when one command made
// several that existed), and a server with no TTL indexes is no error.
func TestEnsureIndexesIsIdempotent(t *testing.T) {
	srv := mongotest.Start(t)
	c := mongotest.Client(t, srv.URI())
	for i := range 3 {
		if err := mongodb.EnsureIndexes(t.Context(), c, mongotest.Database); err != nil {
			t.Fatalf("EnsureIndexes #%d: %v", i+1, err)
		}
	}
}
