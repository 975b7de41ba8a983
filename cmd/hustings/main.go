// Command hustings answers the questions of whoever is on call about the
// locks in a store: who holds them (who), how that changes (watch), and
// which are held (list). It opens the store by URL (package dial, every
// scheme of this module) and only reads: it opens no session, so it never
// takes, renews or releases a lock. A stale leader is stopped by its
// fencing token, not by deleting its lock.
//
//	hustings who   --backend URL NAME…          holder, token, expiry, session
//	hustings watch --backend URL [--json] NAME… one line per change, until Ctrl-C
//	hustings list  --backend URL [PREFIX]       the locks held, where the store can list
//
// Exit codes: 0 done, 1 the store failed (unreachable, an error, cannot
// list), 2 bad usage. Errors are one line on stderr.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	_ "github.com/hustings/hustings/backends/dial/all" // every scheme of this module
)

// Exit codes of run.
const (
	exitOK      = 0 // done; watch: stopped by a signal
	exitFailure = 1 // the store is unreachable, failed, or cannot list
	exitUsage   = 2 // bad command, flag or argument
)

func main() {
	// Like cmd/demo, a root context from signals: watch runs until one.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	context.AfterFunc(ctx, stop) // a second signal ends the process at once
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs the command args names, and returns its exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runWith(ctx, args, stdout, stderr, dialOpen)
}

// command is one subcommand.
type command struct {
	name, args, summary string
	run                 func(ctx context.Context, c *cli, args []string) int
}

func commands() []command {
	return []command{
		{"who", "NAME…", "who holds each lock: holder, fencing token, when the term ends unless renewed, the store's session", runWho},
		{"watch", "NAME…", "one line per change of holder, as it happens, until Ctrl-C or SIGTERM (--json: JSON lines)", runWatch},
		{"list", "[PREFIX]", "the locks held now whose names start with PREFIX, where the store can list", runList},
	}
}

// runWith is run with the function that opens --backend; tests give
// theirs.
func runWith(ctx context.Context, args []string, stdout, stderr io.Writer, open opener) int {
	c := &cli{stdout: stdout, stderr: stderr, open: open}
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		usage(stdout)
		return exitOK
	}
	for _, cmd := range commands() {
		if cmd.name == args[0] {
			return cmd.run(ctx, c, args[1:])
		}
	}
	fmt.Fprintf(stderr, "hustings: unknown command %q (hustings --help lists who, watch and list)\n", args[0])
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: hustings COMMAND --backend URL [flags] [args]")
	fmt.Fprintln(w, "\nRead-only: it opens no session, and never takes, renews or releases a lock.")
	fmt.Fprintln(w, "\ncommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-6s %-9s %s\n", c.name, c.args, c.summary)
	}
	fmt.Fprintln(w, "\nflags of every command:")
	fmt.Fprintln(w, "  --backend URL      the store (required); see below")
	fmt.Fprintf(w, "  --dial-timeout D   how long to wait for the store to answer (default %s)\n", defaultTimeout)
	fmt.Fprintln(w, "  --debug            the store clients' own log lines on stderr")
	fmt.Fprintln(w, "  --slots N          who, watch: each NAME is a group of N slots (NAME/slot-0 …)")
	fmt.Fprintln(w, "  --json             who, watch: one JSON object per line")
	fmt.Fprintln(w, "\nexit codes: 0 done (watch: stopped by a signal), 1 the store failed, is unreachable or cannot list, 2 bad usage")
	fmt.Fprintf(w, "\nbackend URLs: %s\n", backendUsage())
	fmt.Fprintln(w, "\"hustings COMMAND --help\" lists a command's flags.")
}
