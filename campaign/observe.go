package campaign

import (
	"context"
	"errors"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/elector"
	"github.com/hustings/hustings/internal/fanout"
	"github.com/hustings/hustings/internal/validate"
)

// Observe watches who holds the lock name without campaigning. The channel
// first receives the current holder, then a LeaderChanged event whenever
// the holder changes (Holder empty when the lock is free). It is woken by
// the backend's watch where there is one, and polls at the retry interval
// too (a crashed holder's lease runs out without a signal on some
// backends). A slow reader gets the latest holder, never a backlog.
//
// The channel is closed when ctx ends; read it until then or cancel ctx.
// Backend errors are logged and retried; the last holder seen stands.
func Observe(ctx context.Context, b backends.Backend, name string, opts ...Option) (<-chan events.Event, error) {
	cfg := elector.NewConfig(opts)
	if err := errors.Join(elector.CheckContext(ctx), elector.CheckBackend(b), cfg.Refuse(elector.ForObserve)); err != nil {
		return nil, err
	}
	if err := cfg.ValidateCommon(cfg.TTL); err != nil {
		return nil, err
	}
	full := name
	if err := validate.Name(full); err != nil {
		return nil, elector.Invalid(err)
	}
	o := &observer{ctx: ctx, b: b, name: full, cfg: &cfg, out: fanout.NewStream()}
	go o.run() // owned by ctx: it ends, and closes the channel, when ctx ends
	return o.out.C(), nil
}

type observer struct {
	ctx   context.Context
	b     backends.Backend
	name  string
	cfg   *elector.Config
	out   *fanout.Stream
	watch elector.Rewatch
	last  backends.Holder
	seen  bool
}

func (o *observer) run() {
	defer o.out.Close()
	defer o.watch.Stop()
	for o.ctx.Err() == nil {
		o.ensureWatch()
		o.look()
		o.pause()
	}
}

// ensureWatch sets up the backend watch before reading, so no change
// between the read and the wait is missed.
func (o *observer) ensureWatch() {
	if !o.watch.Due(time.Now()) {
		return
	}
	// Only the set-up is bounded; the watch lives on with ctx.
	setup, done := context.WithTimeout(o.ctx, o.cfg.TTL)
	defer done()
	if err := o.watch.Open(o.ctx, setup, o.b.Watch, []string{o.name}, nil, o.cfg.RetryPause()); err != nil {
		o.cfg.Logger.Warn("watch failed; polling", "name", o.name, "err", err)
	}
}

// look reads the holder and publishes it if it changed.
func (o *observer) look() {
	ctx, cancel := context.WithTimeout(o.ctx, o.cfg.TTL)
	defer cancel()
	h, err := o.b.Holder(ctx, o.name)
	if err != nil {
		if o.ctx.Err() == nil {
			o.cfg.Logger.Warn("reading the holder failed", "name", o.name, "err", err)
		}
		return
	}
	if o.seen && h.ID == o.last.ID && h.Token == o.last.Token { // Expires moves with each renewal
		return
	}
	o.last, o.seen = h, true
	o.out.Publish(events.Event{Kind: events.LeaderChanged, Name: o.name, Holder: h.ID, Token: h.Token, Time: time.Now()})
}

// pause waits for a watch signal, the poll interval or ctx, delivering
// events meanwhile.
func (o *observer) pause() {
	t := time.NewTimer(o.cfg.RetryPause())
	defer t.Stop()
	for {
		ch, e := o.out.Ready()
		select {
		case <-o.ctx.Done():
			return
		case <-t.C:
			return
		case _, ok := <-o.watch.C():
			if ok {
				return
			}
			// Broken watch: poll until it is set up again after a pause.
			o.watch.Broken(o.cfg.RetryPause())
		case ch <- e:
			o.out.Sent()
		}
	}
}
