package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/dial"
	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/backends/zookeeper/zkdial"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/group"
	"github.com/hustings/hustings/strategy"
	"github.com/hustings/hustings/transport/httpapi"
)

// nodeFlags are the flags of "demo node".
type nodeFlags struct {
	backend                backendFlags
	target                 dial.Target
	name, id, strategyName string
	http                   string // --http: where to serve the live page
	ttl, work              time.Duration
	slots                  int
	score, weight          float64
}

func parseNode(args []string, stdout io.Writer) (nodeFlags, error) {
	var f nodeFlags
	fs := flag.NewFlagSet("demo node", flag.ContinueOnError)
	f.backend.register(fs, "")
	fs.Lookup("backend").Usage = "URL of a server every node shares (required): " + strings.TrimPrefix(dial.Usage(), "memory | ")
	fs.StringVar(&f.name, "name", "", "lock (or group) name; required")
	fs.StringVar(&f.id, "id", "", "candidate ID; required")
	fs.DurationVar(&f.ttl, "ttl", 2*time.Second, "session TTL: how long a crashed leader's locks outlive it")
	fs.IntVar(&f.slots, "slots", 1, "group slots; 1 is a single lock")
	fs.StringVar(&f.strategyName, "strategy", "", "group strategy: fifo, random, score or weighted")
	fs.Float64Var(&f.score, "score", 0, "score, for --strategy score")
	fs.Float64Var(&f.weight, "weight", 0, "weight, for --strategy weighted; more than 0")
	registerHTTP(fs, &f.http)
	fs.DurationVar(&f.work, "work", 0, "while leading, run a work loop that wakes every D and stops when the term ends; 0: no work")
	if err := parseFlags(fs, args, stdout); err != nil {
		return f, err
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	return f, f.check(set)
}

// check refuses flags that cannot work, each with one line that says what
// would.
func (f *nodeFlags) check(set map[string]bool) (err error) {
	if f.name == "" || f.id == "" {
		return errors.New("demo node needs --name and --id")
	}
	if f.backend.url != "" {
		if f.target, err = f.backend.check(); err != nil {
			return err
		}
	}
	if f.backend.url == "" || f.target.Scheme == "memory" {
		return errors.New("demo node needs a server that every node shares, such as --backend redis://127.0.0.1:6379: " +
			"the memory backend lives inside one process, so each node would hold its own lock")
	}
	switch {
	case f.target.Scheme == "zk" && f.ttl > zkdial.SessionTimeout:
		return fmt.Errorf("--ttl %s is longer than the ZooKeeper session timeout, %s: use %s or less", f.ttl, zkdial.SessionTimeout, zkdial.SessionTimeout)
	case f.work < 0:
		return fmt.Errorf("--work %s is negative: give how often the work loop wakes, or 0 for no work", f.work)
	case f.slots < 1:
		return fmt.Errorf("--slots %d must be at least 1", f.slots)
	case f.strategyName != "" && f.slots < 2:
		return errors.New("--strategy ranks the candidates of a group: it needs --slots 2 or more")
	}
	if f.strategyName != "" {
		if parseStrategy(f.strategyName) == nil {
			return fmt.Errorf("--strategy %q is not one of fifo, random, score, weighted", f.strategyName)
		}
	}
	for flagName, strat := range map[string]string{"score": "score", "weight": "weighted"} {
		if set[flagName] && f.strategyName != strat {
			return fmt.Errorf("--%s is for --strategy %s, not %s", flagName, strat, orNone(f.strategyName))
		}
	}
	if f.strategyName == "weighted" && f.weight <= 0 {
		return fmt.Errorf("--strategy weighted needs a --weight more than 0 (got %v)", f.weight)
	}
	// The library's own rules for the TTL, the ID and the name, checked by
	// building the campaign on a backend that costs nothing (constructors
	// start nothing and make no call).
	n, err := f.candidate(memory.New(), nil)
	if err != nil {
		return err
	}
	n.close()
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return fmt.Sprintf("%q", s)
}

// nodeEvent is one JSON line of the node: "campaigning" once it starts, an
// election or revocation (with the reason's code, reasonCode), and
// with --work "work-started" and "work-stopped" around each term's work.
type nodeEvent struct {
	TimeUnixNano int64        `json:"time_unix_nano"`
	Node         string       `json:"node"`
	Name         string       `json:"name"`
	Slot         int          `json:"slot"`
	Event        string       `json:"event"`
	Token        events.Token `json:"token,omitempty"`
	Reason       string       `json:"reason,omitempty"`
	Detail       string       `json:"detail,omitempty"`
	Passes       int64        `json:"passes,omitempty"`
}

// lines writes JSON lines, one at a time, remembering the first failure.
type lines struct {
	mu  sync.Mutex
	enc *json.Encoder
	err error
}

func (l *lines) print(e nodeEvent) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		l.err = l.enc.Encode(e)
	}
	return l.err
}

// runNode runs one candidate until ctx ends (SIGTERM or SIGINT), printing
// JSON lines on stdout and nothing else. On the way out it closes the
// campaign, which resigns: the term ends with reason "resigned" and the
// lock is released for the next node at once.
func runNode(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := parseNode(args, stdout)
	if err != nil {
		return err
	}
	b, closeBackend, err := f.backend.open(ctx)
	if err != nil {
		return err
	}
	defer closeBackend()
	out := &lines{enc: json.NewEncoder(stdout)}
	c, err := f.candidate(b, out)
	if err != nil {
		return err
	}
	if f.http != "" {
		page := httpapi.New()
		page.Register(c.source)
		live, err := serveLive(f.http, page)
		if err != nil {
			c.close()
			return err
		}
		// Closed after the campaign has ended, which ends the page's streams.
		defer live.close()
		// On stderr: stdout is for JSON lines only.
		fmt.Fprintf(stderr, "demo node: the live page is at %s\n", live.url)
	}
	if err := out.print(nodeEvent{TimeUnixNano: time.Now().UnixNano(), Node: f.id, Name: f.name, Event: "campaigning", Detail: f.describe()}); err != nil {
		return err
	}
	// The campaign runs until Close: a signal resigns rather than cancels.
	// If stdout fails, stop: a node nobody can hear must not go on leading.
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	printed := make(chan error, 1)
	go func() {
		err := printEvents(c.events, f.id, out)
		if err != nil {
			cancel()
			for range c.events { // let the campaign close its channel
			}
		}
		printed <- err
	}()
	ran := make(chan error, 1)
	go func() { ran <- c.run(runCtx) }()
	select {
	case err = <-ran:
	case <-ctx.Done():
		c.close()
		err = <-ran
	}
	if perr := <-printed; perr != nil {
		return perr
	}
	if errors.Is(err, campaign.ErrClosed) {
		return nil // stopped by a signal: resigned
	}
	return err
}

// node is the campaign or group of a node: how to run it, its events, and
// how to close it.
type node struct {
	run    func(context.Context) error
	events <-chan events.Event
	close  func()
	source httpapi.Source // for the live page
}

// candidate builds the campaign or group.
func (f nodeFlags) candidate(b backends.Backend, out *lines) (node, error) {
	opts := []campaign.Option{campaign.WithID(f.id), campaign.WithTTL(f.ttl), campaign.WithRetry(f.ttl / 8)}
	work := func(ctx context.Context, term events.Event) error { return f.workLoop(ctx, term, out) }
	if f.slots == 1 {
		c, err := campaign.New(b, f.name, opts...)
		if err != nil {
			return node{}, err
		}
		n := node{run: c.Run, events: c.Events(), close: func() { c.Close() }, source: c}
		if f.work > 0 {
			n.run = func(ctx context.Context) error { return campaign.WhileLeader(ctx, c, work) }
		}
		return n, nil
	}
	if f.strategyName != "" {
		s := parseStrategy(f.strategyName) // checked with the flags
		opts = append(opts, group.WithStrategy(s), group.WithPreemption(f.ttl))
		switch f.strategyName {
		case "score":
			opts = append(opts, group.WithScore(f.score))
		case "weighted":
			opts = append(opts, group.WithWeight(f.weight))
		}
	}
	g, err := group.New(b, f.name, f.slots, opts...)
	if err != nil {
		return node{}, err
	}
	n := node{run: g.Run, events: g.Events(), close: func() { g.Close() }, source: g}
	if f.work > 0 {
		n.run = func(ctx context.Context) error { return campaign.WhileLeader(ctx, g, work) }
	}
	return n, nil
}

// describe says in words what the node does, for its first line.
func (f nodeFlags) describe() string {
	var s strings.Builder
	if f.slots == 1 {
		fmt.Fprintf(&s, "%s campaigns for the lock %q", f.id, f.name)
	} else {
		fmt.Fprintf(&s, "%s campaigns for one of the %d slots of the group %q", f.id, f.slots, f.name)
		if f.strategyName != "" {
			fmt.Fprintf(&s, ", strategy %s", f.strategyName)
		}
	}
	fmt.Fprintf(&s, " on %s (TTL %s, retry %s)", f.target, f.ttl, f.ttl/8)
	if f.work > 0 {
		fmt.Fprintf(&s, "; while leading, a work loop wakes every %s and stops when the term ends (it writes nothing: a real one would write with its token)", f.work)
	}
	s.WriteString("; SIGTERM or Ctrl-C resigns")
	return s.String()
}

// workLoop is the leader's work: it wakes every f.work until the term's
// context ends, and says when it starts and stops.
func (f nodeFlags) workLoop(ctx context.Context, term events.Event, out *lines) error {
	line := nodeEvent{Node: f.id, Name: term.Name, Slot: term.Slot, Token: term.Token}
	line.TimeUnixNano, line.Event = time.Now().UnixNano(), "work-started"
	line.Detail = fmt.Sprintf("wakes every %s while term %d lasts", f.work, term.Token)
	if err := out.print(line); err != nil {
		return err
	}
	t := time.NewTicker(f.work)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			line.TimeUnixNano, line.Event, line.Detail = time.Now().UnixNano(), "work-stopped", "the term ended"
			_ = out.print(line) // a failed stdout is printEvents' to report
			return nil
		case <-t.C:
			line.Passes++
		}
	}
}

// printEvents writes one JSON line per event until ch closes.
func printEvents(ch <-chan events.Event, id string, out *lines) error {
	for e := range ch {
		line := nodeEvent{TimeUnixNano: e.Time.UnixNano(), Node: id, Name: e.Name, Slot: e.Slot, Event: e.Kind.String(), Token: e.Token}
		if e.Reason != nil {
			line.Reason = reasonCode(e.Reason)
			if line.Reason == "other" {
				line.Detail = e.Reason.Error()
			}
		}
		if err := out.print(line); err != nil {
			return err
		}
	}
	return nil
}

// parseStrategy returns the strategy named by --strategy, or nil for a
// name that is none of them.
func parseStrategy(name string) strategy.Strategy {
	for _, s := range []strategy.Strategy{strategy.FIFO(), strategy.Random(), strategy.Score(), strategy.Weighted()} {
		if s.Name() == name {
			return s
		}
	}
	return nil
}
