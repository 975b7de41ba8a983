package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/dial"
)

// backendFlags are the --backend and --dial-timeout flags of every command.
type backendFlags struct {
	url     string
	timeout time.Duration
}

// register adds the flags to fs, --backend defaulting to def.
func (f *backendFlags) register(fs *flag.FlagSet, def string) {
	fs.StringVar(&f.url, "backend", def, "backend URL: "+dial.Usage())
	fs.DurationVar(&f.timeout, "dial-timeout", dial.DefaultTimeout, "how long to wait for the backend's server to answer")
}

// check refuses a bad URL or timeout before anything starts.
func (f backendFlags) check() (dial.Target, error) {
	if f.timeout <= 0 {
		return dial.Target{}, fmt.Errorf("--dial-timeout %s must be more than 0", f.timeout)
	}
	t, err := dial.Parse(f.url)
	if tag := missingTag(f.url); err != nil && tag != "" {
		return t, fmt.Errorf("%w (this demo was built without that store: run it with go run -tags %s ./cmd/demo)", err, tag)
	}
	return t, err
}

// open connects to the backend: the one place every command opens its
// --backend URL. The clients' own log lines are discarded: the demo
// reports what goes wrong through the campaigns' events.
func (f backendFlags) open(ctx context.Context) (b backends.Backend, close func(), err error) {
	t, err := f.check()
	if err != nil {
		return nil, nil, err
	}
	return t.Open(ctx, dial.WithTimeout(f.timeout))
}

// parseFlags parses a command's flags: --help prints them on stdout and
// returns flag.ErrHelp; any other mistake, a bad value or an argument
// that is not a flag, is one line.
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer) error {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(stdout)
		fmt.Fprintf(stdout, "usage of %s:\n", fs.Name())
		fs.PrintDefaults()
		return err
	case err != nil:
		return fmt.Errorf("%v (%q lists the flags)", err, fs.Name()+" --help")
	case fs.NArg() > 0:
		return fmt.Errorf("%s takes flags only, not %q (%q lists them)", fs.Name(), fs.Arg(0), fs.Name()+" --help")
	}
	return nil
}
