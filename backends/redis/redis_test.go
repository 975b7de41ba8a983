package redis_test

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/backendtest"
	"github.com/hustings/hustings/backends/redis"
	"github.com/hustings/hustings/backends/redis/redistest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newBackend returns a Backend on a client of addr that is closed when the
// test ends.
func newBackend(t testing.TB, addr string, opts ...redis.Option) *redis.Backend {
	t.Helper()
	b, err := redis.New(redistest.Client(t, addr), opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return b
}

func TestContract(t *testing.T) {
	srv := redistest.Start(t)
	backendtest.Run(t, backendtest.Harness{
		New: func(t *testing.T) backends.Backend { return newBackend(t, srv.Addr()) },
		TTL: time.Second,
	})
}
