package memberlist_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/strategy"
	"github.com/hustings/hustings/transport/memberlist"
)

func TestNewRejectsBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		id   string
		opts []memberlist.Option
	}{
		{"empty ID", "", nil},
		{"ID with a space", "a b", nil},
		{"ID too long", strings.Repeat("x", 256), nil},
		{"host name as bind address", "n", []memberlist.Option{memberlist.WithBindAddr("localhost")}},
		{"port out of range", "n", []memberlist.Option{memberlist.WithBindPort(65536)}},
		{"negative port", "n", []memberlist.Option{memberlist.WithBindPort(-1)}},
		{"zero gossip interval", "n", []memberlist.Option{memberlist.WithGossipInterval(0)}},
		{"negative probe interval", "n", []memberlist.Option{memberlist.WithProbeInterval(-time.Second)}},
		{"zero push-pull interval", "n", []memberlist.Option{memberlist.WithPushPullInterval(0)}},
		{"zero TCP timeout", "n", []memberlist.Option{memberlist.WithTCPTimeout(0)}},
		{"zero broadcast timeout", "n", []memberlist.Option{memberlist.WithBroadcastTimeout(0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := memberlist.New(tc.id, tc.opts...); !errors.Is(err, memberlist.ErrInvalid) {
				t.Errorf("New: %v, want ErrInvalid", err)
			}
		})
	}
}

func TestBadEntriesAreRejected(t *testing.T) {
	n := newNode(t, "n")
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		group string
		c     strategy.Candidate
	}{
		{"empty group", "", strategy.Candidate{}},
		{"NaN score", "g", strategy.Candidate{Score: math.NaN()}},
		{"infinite score", "g", strategy.Candidate{Score: math.Inf(1)}},
		{"negative weight", "g", strategy.Candidate{Weight: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := n.Register(ctx, tc.group, tc.c)
			if !errors.Is(err, memberlist.ErrInvalid) || !errors.Is(err, backends.ErrInvalid) {
				t.Errorf("Register: %v, want ErrInvalid of both packages", err)
			}
		})
	}
	if err := n.Announce(ctx, "lock", -1, 1); !errors.Is(err, memberlist.ErrInvalid) {
		t.Errorf("Announce of slot -1: %v, want ErrInvalid", err)
	}
	if err := n.Announce(ctx, "", 0, 1); !errors.Is(err, memberlist.ErrInvalid) {
		t.Errorf("Announce of an empty name: %v, want ErrInvalid", err)
	}
	if _, err := n.Members(ctx, ""); !errors.Is(err, memberlist.ErrInvalid) {
		t.Errorf("Members of an empty group: %v, want ErrInvalid", err)
	}
	if err := n.Deregister(ctx, ""); !errors.Is(err, memberlist.ErrInvalid) {
		t.Errorf("Deregister of an empty group: %v, want ErrInvalid", err)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := n.Register(done, "g", strategy.Candidate{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Register with a done context: %v, want context.Canceled", err)
	}
}

// Entries that would not fit in memberlist's node metadata are refused
// whole, and what was there stays. (The node fills up before Start, so
// that the test does not wait for each claim to be gossiped.)
func TestEntriesBeyondTheMetadataLimitAreRefused(t *testing.T) {
	t.Parallel()
	peer := cluster(t, "peer")[0]
	n, ctx := newNode(t, "big"), context.Background()
	register(t, n, "g", strategy.Candidate{Score: 1, Meta: map[string]string{"k": "v"}})

	_, err := n.Register(ctx, "g", strategy.Candidate{Score: 2, Meta: map[string]string{"blob": strings.Repeat("x", memberlist.MaxMetaSize)}})
	if !errors.Is(err, memberlist.ErrTooLarge) {
		t.Fatalf("Register of %d bytes of metadata: %v, want ErrTooLarge", memberlist.MaxMetaSize, err)
	}
	var announced int
	for i := range memberlist.MaxMetaSize {
		err = n.Announce(ctx, fmt.Sprintf("lock-%03d", i), 0, 1)
		if err != nil {
			break
		}
		announced++
	}
	if !errors.Is(err, memberlist.ErrTooLarge) || announced < 10 {
		t.Fatalf("after %d claims, Announce: %v; want ErrTooLarge, and room for at least 10", announced, err)
	}
	if err := n.Start(ctx, peer.Addr()); err != nil {
		t.Fatal(err)
	}
	nodes := []*memberlist.Node{n, peer}
	eventually(t, "the peer sees what fits, unchanged", func() error {
		if got := len(peer.Leaders(fmt.Sprintf("lock-%03d", announced-1))); got != 1 {
			return fmt.Errorf("the last claim that fit is seen %d times", got)
		}
		return sees(nodes, "g", "big:1:0:map[k:v]")()
	})
	if got := n.Leaders(fmt.Sprintf("lock-%03d", announced)); len(got) != 0 {
		t.Errorf("the refused claim is listed: %v", got)
	}
}

func TestStartAndJoinErrors(t *testing.T) {
	ctx := context.Background()
	n := newNode(t, "j1")
	if err := n.Join(ctx, "127.0.0.1:1"); !errors.Is(err, memberlist.ErrNotStarted) {
		t.Errorf("Join before Start: %v, want ErrNotStarted", err)
	}
	if err := n.Start(ctx, closedAddr(t)); !errors.Is(err, memberlist.ErrJoin) {
		t.Errorf("Start with a seed nobody listens on: %v, want ErrJoin", err)
	}
	if n.Addr() != "" {
		t.Errorf("Addr after a failed Start = %q, want empty", n.Addr())
	}
	if err := n.Start(ctx); err != nil {
		t.Fatalf("Start again, alone: %v", err)
	}
	if err := n.Start(ctx); !errors.Is(err, memberlist.ErrStarted) {
		t.Errorf("second Start: %v, want ErrStarted", err)
	}
	if err := n.Join(ctx); !errors.Is(err, memberlist.ErrJoin) {
		t.Errorf("Join without seeds: %v, want ErrJoin", err)
	}
	other := newNode(t, "j2")
	if err := other.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := other.Join(ctx, n.Addr()); err != nil {
		t.Errorf("Join of a started node: %v", err)
	}
	register(t, n, "g", strategy.Candidate{})
	eventually(t, "j2 sees j1", sees([]*memberlist.Node{other}, "g", "j1:0:0:map[]"))

	_, port, err := net.SplitHostPort(n.Addr())
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	if err := newNode(t, "j3", memberlist.WithBindPort(p)).Start(ctx); err == nil {
		t.Errorf("Start on a port in use by %s succeeded", n.ID())
	}
}

// closedAddr returns a loopback address nobody listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}
