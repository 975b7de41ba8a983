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
	"github.com/hustings/hustings/strategy"
)

// An option given to a call it does not apply to would be ignored: the
// call returns ErrInvalid naming it, and where it applies.
func TestOptionThatDoesNotApplyIsRefused(t *testing.T) {
	b := memory.New()
	fn := func(context.Context, events.Token) (int, error) { return 0, nil }
	calls := []struct {
		option string
		call   func() error
	}{
		{"WithTTL", func() error {
			_, err := campaign.Observe(t.Context(), b, "lock", campaign.WithTTL(time.Minute))
			return err
		}},
		{"WithGrace", func() error {
			_, err := campaign.RunIfLeader(t.Context(), b, "job", fn, campaign.WithGrace(time.Minute))
			return err
		}},
		{"WithWait", func() error {
			_, err := campaign.NewSession(b, campaign.WithWait(time.Minute))
			return err
		}},
		{"WithStrategy", func() error {
			_, err := group.RunIfLeader(t.Context(), b, "g", 2, fn, group.WithStrategy(strategy.FIFO()))
			return err
		}},
		{"WithMinHold", func() error {
			_, err := campaign.Observe(t.Context(), b, "lock", campaign.WithMinHold(time.Second))
			return err
		}},
		{"WithMinHold given to Every", func() error {
			return campaign.Every(t.Context(), b, "job", time.Second, func(context.Context, events.Token) error { return nil }, campaign.WithMinHold(time.Second))
		}},
	}
	for _, c := range calls {
		err := c.call()
		if !errors.Is(err, campaign.ErrInvalid) || !strings.Contains(err.Error(), "does not apply") {
			t.Errorf("%s: %v, want ErrInvalid saying it does not apply", c.option, err)
		}
	}
}

// Every takes WithClock, and its own runs take the hold it gives them.
func TestEveryTakesItsOptions(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	err := campaign.Every(ctx, memory.New(), "job", time.Second, func(context.Context, events.Token) error { return nil },
		campaign.WithClock(time.Now), campaign.WithTTL(time.Second), campaign.WithFailOpen())
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Every = %v, want it to run until its context ends", err)
	}
}
