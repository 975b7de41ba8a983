package redis_test

import (
	"log"

	goredis "github.com/redis/go-redis/v9"

	"github.com/hustings/hustings/backends/redis"
	"github.com/hustings/hustings/campaign"
)

// A campaign on Redis: the caller makes the client, with
// ContextTimeoutEnabled, and closes it. docs/backends.md shows this
// Example; it is compiled, not run (it names a server that is not there).
func Example_campaign() {
	// ContextTimeoutEnabled: without it go-redis does not interrupt a call
	// whose context ends, and a campaign could not revoke on time.
	rdb := goredis.NewClient(&goredis.Options{Addr: "10.0.0.5:6379", ContextTimeoutEnabled: true})
	defer rdb.Close()
	b, err := redis.New(rdb, redis.WithPrefix("billing"))
	if err != nil {
		log.Fatal(err)
	}
	c, err := campaign.New(b, "nightly-settlement")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
}
