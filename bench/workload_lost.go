package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/backends/redis"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
)

// lostTTL is the holder's TTL in the lock-lost workload: its keep-alive
// interval, a third of it, bounds a loss found by renewal alone.
const lostTTL = 900 * time.Millisecond

// lockLost times how long a leader believes it leads after its lock was
// deleted behind its back and taken by a candidate of another process:
// from the start of the delete to the leader's Revoked event. It runs on
// Redis, where the bench deletes the lock key (a DEL, as an eviction
// would), and on the memory backend (Backend.Delete); the other
// backends' own tests check their pushes.
func (b *bench) lockLost(ctx context.Context, s *system) error {
	del := deleter(s)
	if del == nil {
		return nil
	}
	other, closeOther, err := s.fresh()
	if err != nil {
		return err
	}
	defer closeOther()
	var samples []time.Duration
	for i := range b.cfg.EventSamples {
		d, err := lostOnce(ctx, s, other, del, fmt.Sprintf("bench-lost-%d-%d", time.Now().UnixNano(), i))
		if err != nil {
			return fmt.Errorf("sample %d: %w", i, err)
		}
		samples = append(samples, d)
	}
	d := Summarize(samples)
	b.report.Add(Row{Workload: "lock-lost", Backend: s.name, Subject: "hustings DEL + take-over → Revoked", Latency: &d,
		Note: fmt.Sprintf("TTL %v: a loss found by renewal alone takes up to %v", lostTTL, lostTTL/3)})
	b.logf("  %-30s p50 %-9s p99 %s", "DEL + take-over → Revoked", fmtDur(d.P50), fmtDur(d.P99))
	return nil
}

// lostOnce elects a campaign on name, lets it hold across a renewal (a
// Redis session follows a lock's channel from then on), deletes its lock
// and takes it on other, and returns how long the campaign took to
// revoke its term.
func lostOnce(ctx context.Context, s *system, other backends.Backend, del func(context.Context, string) error, name string) (time.Duration, error) {
	c, err := campaign.New(s.backend, name, campaign.WithID("bench-holder"), campaign.WithTTL(lostTTL))
	if err != nil {
		return 0, err
	}
	defer c.Close()
	go func() { _ = c.Run(ctx) }() // ends with Close
	if e, err := nextEvent(ctx, c.Events()); err != nil || e.Kind != events.Elected {
		return 0, fmt.Errorf("waiting for the holder's election: %v %v", e, err)
	}
	time.Sleep(lostTTL/3 + 100*time.Millisecond) // a leader that has held across a renewal
	taker, err := other.Open(ctx, "bench-taker", lostTTL)
	if err != nil {
		return 0, err
	}
	defer func() { _ = taker.Close(context.WithoutCancel(ctx)) }()
	start := time.Now()
	if err := del(ctx, name); err != nil {
		return 0, err
	}
	if _, err := taker.Acquire(ctx, name, 0); err != nil {
		return 0, fmt.Errorf("take-over: %w", err)
	}
	e, err := nextEvent(ctx, c.Events())
	switch {
	case err != nil:
		return 0, err
	case e.Kind != events.Revoked || !errors.Is(e.Reason, events.ErrLockLost):
		return 0, fmt.Errorf("the holder's next event is %s, want revoked for a lost lock", e)
	}
	return time.Since(start), nil
}

// deleter returns how the bench deletes a lock behind its holder's back
// on s, or nil where it does not.
func deleter(s *system) func(ctx context.Context, name string) error {
	if mem, ok := s.backend.(*memory.Backend); ok {
		return func(_ context.Context, name string) error { mem.Delete(name); return nil }
	}
	if s.redisClient != nil {
		return func(ctx context.Context, name string) error {
			return s.redisClient.Del(ctx, redis.DefaultPrefix+":"+redis.HashTag(name)+":lock").Err()
		}
	}
	return nil
}

// nextEvent returns the next event of ch, or an error after 10 s.
func nextEvent(ctx context.Context, ch <-chan events.Event) (events.Event, error) {
	select {
	case e, ok := <-ch:
		if !ok {
			return events.Event{}, errors.New("events closed")
		}
		return e, nil
	case <-time.After(10 * time.Second):
		return events.Event{}, errors.New("no event within 10s")
	case <-ctx.Done():
		return events.Event{}, ctx.Err()
	}
}
