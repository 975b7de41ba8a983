// Command redisonly is the program of TestDepsOfOneOpener: it opens a
// backend by URL, with only the Redis opener registered.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/hustings/hustings/backends/dial"
	_ "github.com/hustings/hustings/backends/redis/redisdial"
)

func main() {
	_, closeBackend, err := dial.Open(context.Background(), os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	closeBackend()
}
