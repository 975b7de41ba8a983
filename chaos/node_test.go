package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.uber.org/goleak"

	"github.com/hustings/hustings/backends/dial"
	_ "github.com/hustings/hustings/backends/dial/all" // every server's URL scheme
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/fence"
	"github.com/hustings/hustings/group"
	"github.com/hustings/hustings/internal/elector"
)

// nodeEnv, set to 1, makes this test binary run as one candidate node
// (see TestMain) instead of running the tests.
const nodeEnv = "HUSTINGS_CHAOS_NODE"

// The node's timing: its stall meter ticks every stallTick and reports a
// gap above stallGap; a leader writes to the fenced resource every
// writeEvery, after writeWork of "work" between checking its term and
// writing (the window in which a pause makes a write stale).
const (
	stallTick  = 5 * time.Millisecond
	stallGap   = 50 * time.Millisecond
	writeEvery = 50 * time.Millisecond
	writeWork  = 5 * time.Millisecond
)

// line is one JSON line a node prints on stdout: "ready" once it handles
// SIGTERM, an election or revocation (the demo node's schema plus the
// deadline), a stall of gap_ns, or at a graceful exit the number of
// goroutines it leaked.
type line struct {
	TimeUnixNano     int64        `json:"time_unix_nano"`
	Node             string       `json:"node"`
	Name             string       `json:"name,omitempty"`
	Slot             int          `json:"slot"`
	Event            string       `json:"event"`
	Token            events.Token `json:"token,omitempty"`
	DeadlineUnixNano int64        `json:"deadline_unix_nano,omitempty"`
	Reason           string       `json:"reason,omitempty"`
	GapNanos         int64        `json:"gap_ns,omitempty"`
	Leaked           int          `json:"leaked,omitempty"`
}

// nodeFlags configure a node.
type nodeFlags struct {
	backend, name, id, fence string
	ttl                      time.Duration
	slots                    int
}

// runNode is a node's main: one campaign (slots 1) or group campaign on
// the backend, printing lines, writing to the fence while it leads, until
// SIGTERM; then it resigns, closes its client and reports leaks.
func runNode(args []string) int {
	var f nodeFlags
	fs := flag.NewFlagSet("chaos node", flag.ContinueOnError)
	fs.StringVar(&f.backend, "backend", "", "backend URL")
	fs.StringVar(&f.name, "name", "", "lock or group name")
	fs.StringVar(&f.id, "id", "", "candidate ID")
	fs.StringVar(&f.fence, "fence", "", "fenced resource URL")
	fs.DurationVar(&f.ttl, "ttl", 2*time.Second, "session TTL")
	fs.IntVar(&f.slots, "slots", 1, "group slots; 1 for one lock")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	out := &printer{enc: json.NewEncoder(os.Stdout), id: f.id}
	// The harness may stop a node as soon as it is ready: only now would a
	// SIGTERM be a graceful stop rather than the default, death.
	out.print(line{TimeUnixNano: time.Now().UnixNano(), Event: "ready"})
	if err := f.run(ctx, out); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(os.Stderr, "chaos node %s: %v\n", f.id, err)
		return 1
	}
	leaked := 0
	if err := goleak.Find(); err != nil {
		fmt.Fprintf(os.Stderr, "chaos node %s: %v\n", f.id, err)
		leaked = max(1, strings.Count(err.Error(), "[Goroutine "))
	}
	out.print(line{TimeUnixNano: time.Now().UnixNano(), Event: "exit", Leaked: leaked})
	return 0
}

// run campaigns until ctx ends.
func (f nodeFlags) run(ctx context.Context, out *printer) error {
	b, closeBackend, err := dial.Open(ctx, f.backend)
	if err != nil {
		return err
	}
	defer closeBackend()
	meterCtx, stopMeter := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { meter(meterCtx, out) })
	defer wg.Wait()
	defer stopMeter()

	fence := &fenceClient{url: f.fence, node: f.id, http: &http.Client{Timeout: time.Second}}
	defer fence.http.CloseIdleConnections()
	opts := []campaign.Option{campaign.WithID(f.id), campaign.WithTTL(f.ttl), campaign.WithRetry(f.ttl / 8)}
	// Each node's stderr is its log, kept when the run fails: warnings
	// (failed renewals, lost terms) always, every call with
	// HUSTINGS_CHAOS_LOGS.
	level := slog.LevelInfo
	if os.Getenv("HUSTINGS_CHAOS_LOGS") != "" {
		level = slog.LevelDebug
	}
	opts = append(opts, campaign.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))))
	var evs <-chan events.Event
	var run func(context.Context) error
	var closeCampaign func() error
	if f.slots == 1 {
		c, err := campaign.New(b, f.name, opts...)
		if err != nil {
			return err
		}
		evs, closeCampaign = c.Events(), c.Close
		run = func(ctx context.Context) error { return campaign.WhileLeader(ctx, c, fence.work) }
	} else {
		g, err := group.New(b, f.name, f.slots, opts...)
		if err != nil {
			return err
		}
		evs, closeCampaign = g.Events(), g.Close
		run = func(ctx context.Context) error { return campaign.WhileLeader(ctx, g, fence.work) }
	}
	wg.Go(func() {
		for e := range evs {
			out.event(e)
		}
	})
	// SIGTERM (ctx's end) closes the campaign, which resigns: its term is
	// reported revoked as "resigned", as a service stopping would.
	ran := make(chan struct{})
	defer close(ran) // before wg.Wait, deferred earlier
	wg.Go(func() {
		select {
		case <-ctx.Done():
			_ = closeCampaign()
		case <-ran:
		}
	})
	if err := run(context.Background()); !errors.Is(err, campaign.ErrClosed) {
		return err
	}
	return nil
}

// printer writes lines, one at a time.
type printer struct {
	mu  sync.Mutex
	enc *json.Encoder
	id  string
}

func (p *printer) print(l line) {
	p.mu.Lock()
	defer p.mu.Unlock()
	l.Node = p.id
	_ = p.enc.Encode(l) // the harness reads until the end; nothing to do if it left
}

func (p *printer) event(e events.Event) {
	l := line{TimeUnixNano: e.Time.UnixNano(), Name: e.Name, Slot: e.Slot, Event: e.Kind.String(), Token: e.Token, DeadlineUnixNano: e.Deadline.UnixNano()}
	l.Reason = elector.ReasonCode(e.Reason)
	p.print(l)
}

// meter reports every jump of the node's clock (see clockJumps) as a
// stall line.
func meter(ctx context.Context, out *printer) {
	clockJumps(ctx, func(from, to time.Time) {
		out.print(line{TimeUnixNano: to.UnixNano(), Event: "stall", GapNanos: int64(to.Sub(from))})
	})
}

// fenceClient writes to the fenced resource with the term's token.
type fenceClient struct {
	url, node string
	http      *http.Client
}

// work is the leader's work: until its term ends, it checks the term,
// works a little, then writes with the term's token.
func (c *fenceClient) work(ctx context.Context, term events.Event) error {
	t := time.NewTicker(writeEvery)
	defer t.Stop()
	for {
		if ctx.Err() != nil {
			return nil
		}
		time.Sleep(writeWork) // deliberately not ctx-aware: the stale window
		c.write(term)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (c *fenceClient) write(term events.Event) {
	q := url.Values{"node": {c.node}, "name": {term.Name}, "slot": {strconv.Itoa(term.Slot)}}
	req, err := http.NewRequest(http.MethodPost, c.url+"?"+q.Encode(), nil)
	if err != nil {
		return
	}
	fence.SetHeaders(req.Header, guardKey(term.Name, term.Slot), term.Token)
	resp, err := c.http.Do(req)
	if err != nil {
		return // the resource is the harness's; it records what arrived
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}
