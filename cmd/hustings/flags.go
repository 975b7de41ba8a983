package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/dial"
	"github.com/hustings/hustings/internal/elector"
	"github.com/hustings/hustings/internal/validate"
)

// defaultTimeout bounds opening the store and each read of it.
const defaultTimeout = dial.DefaultTimeout

// opener opens the store at raw, waiting at most timeout for it to
// answer; close closes the client it made.
type opener func(ctx context.Context, raw string, timeout time.Duration, logs *slog.Logger) (b backends.Backend, close func(), err error)

// dialOpen opens raw through package dial.
func dialOpen(ctx context.Context, raw string, timeout time.Duration, logs *slog.Logger) (backends.Backend, func(), error) {
	return dial.Open(ctx, raw, dial.WithTimeout(timeout), dial.WithLogger(logs))
}

// backendUsage lists the URLs --backend takes, memory aside: a new
// in-process store is empty.
func backendUsage() string { return strings.TrimPrefix(dial.Usage(), "memory | ") }

// cli is what every command works with.
type cli struct {
	stdout, stderr io.Writer
	open           opener
}

// fail prints one line for err on stderr and returns code.
func (c *cli) fail(code int, format string, args ...any) int {
	msg := strings.ReplaceAll(fmt.Sprintf(format, args...), "\n", " ")
	fmt.Fprintln(c.stderr, "hustings: "+msg)
	return code
}

// flags are the flags of the commands; each command registers the ones
// it takes.
type flags struct {
	backend string
	timeout time.Duration
	debug   bool
	json    bool
	slots   int
}

// parse parses the flags of command name from args, flags and arguments
// in any order ("who NAME --backend URL" too). It returns the arguments,
// or an exit code: exitOK after --help, exitUsage after a mistake (one
// line on stderr).
func (c *cli) parse(name string, args []string, f *flags, withNames bool) ([]string, int, bool) {
	fs := flag.NewFlagSet("hustings "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&f.backend, "backend", "", "the store's URL (required): "+backendUsage())
	fs.DurationVar(&f.timeout, "dial-timeout", defaultTimeout, "how long to wait for the store to answer, opening it and at each read")
	fs.BoolVar(&f.debug, "debug", false, "the store clients' own log lines on stderr")
	if withNames {
		fs.BoolVar(&f.json, "json", false, "one JSON object per line")
		fs.IntVar(&f.slots, "slots", 1, "each NAME is a group of N slots, NAME/slot-0 to NAME/slot-(N-1)")
	}
	f.slots = 1 // list takes none
	var rest []string
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(c.stdout)
			fmt.Fprintf(c.stdout, "usage: hustings %s --backend URL [flags] %s\n", name, argsOf(name))
			fs.PrintDefaults()
			return nil, exitOK, false
		}
		if err != nil {
			return nil, c.fail(exitUsage, "%v (hustings %s --help lists the flags)", err, name), false
		}
		if fs.NArg() == 0 {
			break
		}
		rest = append(rest, fs.Arg(0))
		args = fs.Args()[1:]
	}
	switch {
	case f.backend == "":
		return nil, c.fail(exitUsage, "%s needs --backend URL, one of %s", name, backendUsage()), false
	case f.timeout <= 0:
		return nil, c.fail(exitUsage, "--dial-timeout %s must be more than 0", f.timeout), false
	case f.slots < 1:
		return nil, c.fail(exitUsage, "--slots %d must be at least 1", f.slots), false
	}
	if _, err := dial.Parse(f.backend); err != nil {
		return nil, c.fail(exitUsage, "%v", err), false
	}
	return rest, exitOK, true
}

// argsOf returns the arguments command name takes, for its usage line.
func argsOf(name string) string {
	for _, cmd := range commands() {
		if cmd.name == name {
			return cmd.args
		}
	}
	return ""
}

// lockNames returns the locks NAME… name, each group expanded into its
// slots; a name that no lock can have is a usage error.
func (c *cli) lockNames(cmd string, args []string, slots int) ([]string, int, bool) {
	if len(args) == 0 {
		return nil, c.fail(exitUsage, "%s needs at least one lock NAME", cmd), false
	}
	var names []string
	for _, a := range args {
		for _, n := range elector.SlotNames(a, slots) {
			if err := validate.Name(n); err != nil {
				return nil, c.fail(exitUsage, "%v", err), false
			}
			names = append(names, n)
		}
	}
	return names, exitOK, true
}

// connect opens the store of f, and returns it with the function that
// closes it, or an exit code after one line on stderr.
func (c *cli) connect(ctx context.Context, f flags) (backends.Backend, func(), int, bool) {
	logs := slog.New(slog.DiscardHandler)
	if f.debug {
		logs = slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	b, closeStore, err := c.open(ctx, f.backend, f.timeout, logs)
	if err != nil {
		return nil, nil, c.fail(exitFailure, "%v", err), false
	}
	return b, closeStore, exitOK, true
}
