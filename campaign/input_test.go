package campaign_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/group"
)

// TestNilInputIsRefused: a typed-nil backend and nil contexts are refused
// with ErrInvalid at the call, never a panic in the caller or, later, in a
// goroutine of the library.
func TestNilInputIsRefused(t *testing.T) {
	var typedNil *memory.Backend
	noop := func(context.Context, events.Token) (int, error) { return 0, nil }
	var nilCtx context.Context
	c, err := campaign.New(memory.New(), "x")
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, c)
	cand, err := campaign.NewSession(memory.New())
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, cand)
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"New on a typed nil", func() error { _, err := campaign.New(typedNil, "x"); return err }},
		{"NewSession on a typed nil", func() error { _, err := campaign.NewSession(typedNil); return err }},
		{"group.New on a typed nil", func() error { _, err := group.New(typedNil, "g", 2); return err }},
		{"RunIfLeader on a typed nil", func() error { _, err := campaign.RunIfLeader(t.Context(), typedNil, "x", noop); return err }},
		{"Observe on a typed nil", func() error { _, err := campaign.Observe(t.Context(), typedNil, "x"); return err }},
		{"Run(nil)", func() error { return c.Run(nilCtx) }},
		{"Resign(nil)", func() error { return c.Resign(nilCtx) }},
		{"Candidate.Run(nil)", func() error { return cand.Run(nilCtx) }},
		{"RunIfLeader(nil)", func() error { _, err := campaign.RunIfLeader(nilCtx, memory.New(), "x", noop); return err }},
		{"Observe(nil)", func() error { _, err := campaign.Observe(nilCtx, memory.New(), "x"); return err }},
		{"Every(nil)", func() error {
			return campaign.Every(nilCtx, memory.New(), "x", time.Minute, func(context.Context, events.Token) error { return nil })
		}},
		{"WithSession(nil)", func() error { _, err := campaign.New(memory.New(), "x", campaign.WithSession(nil)); return err }},
		{"WhileLeader(nil)", func() error {
			return campaign.WhileLeader(nilCtx, c, func(context.Context, events.Event) error { return nil })
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); !errors.Is(err, campaign.ErrInvalid) {
				t.Fatalf("got %v, want ErrInvalid", err)
			}
		})
	}
}

// TestBadCandidateIsRefused: candidate IDs follow the rules of lock names,
// and a candidate's registry entry is checked whether or not a strategy
// will read it; a group's size is capped.
func TestBadCandidateIsRefused(t *testing.T) {
	b := memory.New()
	for _, tc := range []struct {
		name string
		make func() error
		want string
	}{
		{"empty ID", func() error { _, err := campaign.New(b, "x", campaign.WithID("")); return err }, "empty candidate ID"},
		{"2 MiB ID", func() error { _, err := campaign.New(b, "x", campaign.WithID(strings.Repeat("i", 2<<20))); return err }, "longer than"},
		{"ID with a newline", func() error { _, err := campaign.New(b, "x", campaign.WithID("a\nb")); return err }, "control character"},
		{"empty ID on a candidate", func() error { _, err := campaign.NewSession(b, campaign.WithID("")); return err }, "empty candidate ID"},
		{"NaN weight, no strategy", func() error { _, err := group.New(b, "g", 2, group.WithWeight(nan())); return err }, "weight"},
		{"NaN score, no strategy", func() error { _, err := group.New(b, "g", 2, group.WithScore(nan())); return err }, "score"},
		{"a million slots", func() error { _, err := group.New(b, "g", 1_000_000); return err }, "at most 1000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.make()
			if !errors.Is(err, campaign.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want ErrInvalid mentioning %q", err, tc.want)
			}
		})
	}
}

// TestEmptyNameIsRefused: every entry point refuses an empty lock name
// at once with ErrInvalid, checking the caller's name and not a name it
// derives from it (Every's windows are "<name>/window-k"). A call that
// does not return within the bound fails the test instead of hanging it.
func TestEmptyNameIsRefused(t *testing.T) {
	b := memory.New()
	noop := func(context.Context, events.Token) (int, error) { return 0, nil }
	for _, tc := range []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"New", func(context.Context) error { _, err := campaign.New(b, ""); return err }},
		{"group.New", func(context.Context) error { _, err := group.New(b, "", 2); return err }},
		{"RunIfLeader", func(ctx context.Context) error { _, err := campaign.RunIfLeader(ctx, b, "", noop); return err }},
		{"Observe", func(ctx context.Context) error { _, err := campaign.Observe(ctx, b, ""); return err }},
		{"Every", func(ctx context.Context) error {
			return campaign.Every(ctx, b, "", time.Minute, func(context.Context, events.Token) error { return nil })
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			got := make(chan error, 1)
			go func() { got <- tc.call(ctx) }()
			select {
			case err := <-got:
				if !errors.Is(err, campaign.ErrInvalid) || !strings.Contains(err.Error(), "empty lock name") {
					t.Fatalf("got %v, want ErrInvalid for the empty name", err)
				}
			case <-time.After(10 * time.Second):
				cancel()
				<-got
				t.Fatal("did not return within 10s: the empty name was not refused")
			}
		})
	}
}

func nan() float64 {
	zero := 0.0
	return zero / zero
}
