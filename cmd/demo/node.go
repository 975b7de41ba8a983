package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/group"
	"github.com/hustings/hustings/strategy"
)

// nodeFlags are the flags of "demo node".
type nodeFlags struct {
	backend, name, id, strategy string
	ttl, work                   time.Duration
	slots                       int
	score, weight               float64
}

func parseNode(args []string, stderr io.Writer) (nodeFlags, error) {
	var f nodeFlags
	fs := flag.NewFlagSet("demo node", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.backend, "backend", "memory", "backend URL: "+backendUsage)
	fs.StringVar(&f.name, "name", "", "lock (or group) name; required")
	fs.StringVar(&f.id, "id", "", "candidate ID; required")
	fs.DurationVar(&f.ttl, "ttl", 2*time.Second, "session TTL")
	fs.IntVar(&f.slots, "slots", 1, "group slots; 1 is a single lock")
	fs.StringVar(&f.strategy, "strategy", "", "group strategy: fifo, random, score or weighted")
	fs.Float64Var(&f.score, "score", 0, "score, for --strategy score")
	fs.Float64Var(&f.weight, "weight", 0, "weight, for --strategy weighted")
	fs.DurationVar(&f.work, "work", 0, "run a work loop while leading, checking the term every D")
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	switch {
	case f.name == "" || f.id == "":
		return f, fmt.Errorf("demo node needs --name and --id")
	case f.slots < 1:
		return f, fmt.Errorf("--slots %d must be at least 1", f.slots)
	case f.strategy != "" && f.slots < 2:
		return f, fmt.Errorf("--strategy needs --slots of 2 or more")
	}
	return f, nil
}

// nodeEvent is the one JSON line printed per event.
type nodeEvent struct {
	TimeUnixNano int64        `json:"time_unix_nano"`
	Node         string       `json:"node"`
	Name         string       `json:"name"`
	Slot         int          `json:"slot"`
	Event        string       `json:"event"`
	Token        events.Token `json:"token"`
	Reason       string       `json:"reason,omitempty"`
}

// runNode runs one candidate until ctx ends (SIGTERM or SIGINT), printing
// its events as JSON lines on stdout and nothing else; logs go to stderr.
// On the way out it resigns gracefully and prints the Revoked.
func runNode(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := parseNode(args, stderr)
	if err != nil {
		return err
	}
	b, closeBackend, err := openBackend(ctx, f.backend)
	if err != nil {
		return err
	}
	defer closeBackend()
	opts := []campaign.Option{campaign.WithID(f.id), campaign.WithTTL(f.ttl), campaign.WithRetry(f.ttl / 8)}
	run, evs, err := f.candidate(b, opts)
	if err != nil {
		return err
	}
	// If stdout fails, stop: a node nobody can hear must not go on leading.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	printed := make(chan error, 1)
	go func() {
		err := printEvents(evs, f.id, stdout)
		if err != nil {
			cancel()
			for range evs { // let the campaign close its channel
			}
		}
		printed <- err
	}()
	err = run(ctx)
	if perr := <-printed; perr != nil {
		return perr
	}
	if errors.Is(err, context.Canceled) {
		return nil // stopped by a signal: a graceful end
	}
	return err
}

// candidate builds the campaign or group and returns how to run it and its
// event channel.
func (f nodeFlags) candidate(b backends.Backend, opts []campaign.Option) (func(context.Context) error, <-chan events.Event, error) {
	if f.slots == 1 {
		c, err := campaign.New(b, f.name, opts...)
		if err != nil {
			return nil, nil, err
		}
		if f.work > 0 {
			return func(ctx context.Context) error { return campaign.WhileLeader(ctx, c, f.workLoop) }, c.Events(), nil
		}
		return c.Run, c.Events(), nil
	}
	if f.strategy != "" {
		s, err := strategy.Parse(f.strategy)
		if err != nil {
			return nil, nil, err
		}
		opts = append(opts, group.WithStrategy(s), group.WithScore(f.score), group.WithWeight(f.weight), group.WithPreemption(f.ttl))
	}
	g, err := group.New(b, f.name, f.slots, opts...)
	if err != nil {
		return nil, nil, err
	}
	if f.work > 0 {
		return func(ctx context.Context) error { return group.WhileLeader(ctx, g, f.workLoop) }, g.Events(), nil
	}
	return g.Run, g.Events(), nil
}

// workLoop is the leader's work: it checks its term every f.work and stops
// the moment the term ends.
func (f nodeFlags) workLoop(ctx context.Context, term events.Event) error {
	t := time.NewTicker(f.work)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// printEvents writes one JSON line per event until ch closes.
func printEvents(ch <-chan events.Event, id string, w io.Writer) error {
	enc := json.NewEncoder(w)
	for e := range ch {
		line := nodeEvent{e.Time.UnixNano(), id, e.Name, e.Slot, e.Kind.String(), e.Token, ""}
		if e.Reason != nil {
			line.Reason = e.Reason.Error()
		}
		if err := enc.Encode(line); err != nil {
			return err
		}
	}
	return nil
}
