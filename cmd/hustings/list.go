package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/hustings/hustings/backends/dial"
)

// runList prints the names of the locks held under PREFIX, one a line,
// sorted; a store that cannot list is a failure of one line.
func runList(ctx context.Context, c *cli, args []string) int {
	var f flags
	rest, code, ok := c.parse("list", args, &f, false)
	if !ok {
		return code
	}
	if len(rest) > 1 {
		return c.fail(exitUsage, "list takes one PREFIX at most, not %q", rest)
	}
	prefix := ""
	if len(rest) == 1 {
		prefix = rest[0]
	}
	t, _ := dial.Parse(f.backend) // parse checked it
	b, closeStore, code, ok := c.connect(ctx, f)
	if !ok {
		return code
	}
	defer closeStore()
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	names, err := b.List(ctx, prefix)
	switch {
	case errors.Is(err, errors.ErrUnsupported):
		return c.fail(exitFailure, "the %s store cannot list its locks: ask who or watch by name", t.Scheme)
	case err != nil:
		return c.fail(exitFailure, "list: %v", err)
	}
	for _, n := range names {
		fmt.Fprintln(c.stdout, n)
	}
	return exitOK
}
