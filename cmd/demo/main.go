// Command demo shows Hustings at work. With no arguments it runs a scripted
// show on the embedded memory backend, no server needed; "demo node" runs
// one candidate per process for multi-process tests, printing its events as
// JSON lines; "demo scenario NAME" runs one of the real-world scenarios.
// Every command takes --backend URL and --dial-timeout D (see "demo --help").
// The demo links no test code and no server: an etcd to try it on comes
// from "go run ./cmd/etcd-dev".
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/hustings/hustings/backends/dial"
)

// command is one subcommand of the demo.
type command struct {
	name, summary string
	run           func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"show", "the scripted show (the default): election, reconcile loop, crash, resignation, a slow consumer, a weighted group", runShow},
		{"node", "one candidate per process, on a server the nodes share, until SIGTERM/SIGINT (which resigns); one JSON line per event on stdout", runNode},
		{"scenario", "a real-world scenario: demo scenario NAME, one of " + strings.Join(scenarioNames(), ", "), runScenario},
	}
}

func main() {
	// The only place in Hustings that builds a root context from signals.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// After the first signal a graceful stop begins; give the signals back
	// to their default, so that a second one ends the process at once.
	context.AfterFunc(ctx, stop)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	switch {
	case errors.Is(err, flag.ErrHelp):
	case err != nil:
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

// run dispatches to a subcommand; flags alone go to the show.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help") {
		usage(stdout)
		return nil
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return runShow(ctx, args, stdout, stderr)
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, args[1:], stdout, stderr)
		}
	}
	usage(stderr)
	return fmt.Errorf("unknown command %q", args[0])
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: demo [command] [--backend URL] [flags]")
	fmt.Fprintln(w, "\ncommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\nbackend URLs: %s (default memory)\n", dial.Usage())
	fmt.Fprintln(w, "a server to try: redis-server --port 6379, then --backend redis://127.0.0.1:6379;")
	fmt.Fprintln(w, "  or \"go run ./cmd/etcd-dev\", which starts an etcd and prints its URL")
	fmt.Fprintln(w, "\"demo COMMAND --help\" lists a command's flags.")
}
