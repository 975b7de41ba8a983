package ops

import (
	"context"
	"errors"
	"time"

	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/elector"
)

// ErrUnhealthy is matched (errors.Is) by every error Health.Check
// returns for a stuck campaign; its message says which lock, which term
// and by how much.
var ErrUnhealthy = errors.New("ops: unhealthy")

// uses is where the options of this package apply: everywhere but
// Observe, which runs no term and no work.
const uses = elector.ForAll &^ elector.ForObserve

// nopHook is the part of an elector.Hook a hook does not need.
type nopHook struct{}

func (nopHook) Campaign(string, string)                                     {}
func (nopHook) Try(string, string, elector.Reason)                          {}
func (nopHook) KeepAlive(string, time.Duration, error)                      {}
func (nopHook) Run(context.Context, string, string, string) elector.RunHook { return nopRun{} }

type nopRun struct{}

func (nopRun) Context(ctx context.Context) context.Context { return ctx }
func (nopRun) Work(int, events.Token, time.Time) func()    { return func() {} }
func (nopRun) Ended(string, error)                         {}
