package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
)

// eventLatency measures how long a change of holder takes to reach a
// consumer: a writer, on a client of its own, takes and releases a lock
// with plain session calls, and campaign.Observe's channel reports each
// change; from the start of the writer's call to the event's receipt. On
// etcd, etcd's Election.Observe is measured beside it (new leaders only:
// it reports no resignation).
func (b *bench) eventLatency(ctx context.Context, s *system) error {
	samples, err := b.observeChanges(ctx, s)
	if err != nil {
		return err
	}
	d := Summarize(samples)
	row := Row{Workload: "events", Backend: s.name, Subject: "hustings Observe", Latency: &d, Note: "acquire and release, from the start of the write"}
	b.logf("  %-30s p50 %-9s p99 %s", row.Subject, fmtDur(d.P50), fmtDur(d.P99))
	if s.name == "etcd" {
		samples, err := b.etcdObserve(ctx, s)
		if err != nil {
			return fmt.Errorf("etcd Election.Observe: %w", err)
		}
		pd := Summarize(samples)
		b.report.Add(row)
		b.report.Add(Row{Workload: "events", Backend: s.name, Subject: "etcd Election.Observe", Latency: &pd,
			Baseline: row.Subject, Ratio: ratio(float64(pd.P50), float64(d.P50)), Note: "new leaders only, from the start of Campaign"})
		b.logf("  %-30s p50 %-9s p99 %s", "etcd Election.Observe", fmtDur(pd.P50), fmtDur(pd.P99))
		return nil
	}
	b.report.Add(row)
	return nil
}

func (b *bench) observeChanges(ctx context.Context, s *system) ([]time.Duration, error) {
	octx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch, err := campaign.Observe(octx, s.backend, "observed", campaign.WithRetry(time.Second))
	if err != nil {
		return nil, err
	}
	wb, closer, err := s.fresh()
	if err != nil {
		return nil, err
	}
	defer closer()
	sess, err := wb.Open(ctx, "writer", s.maxTTL)
	if err != nil {
		return nil, err
	}
	defer sess.Close(context.WithoutCancel(ctx))
	renewed := time.Now()
	if _, err := waitHolder(ctx, ch, ""); err != nil { // the first event: nobody holds it
		return nil, err
	}
	var out []time.Duration
	for range b.cfg.EventSamples {
		if time.Since(renewed) > s.maxTTL/3 {
			if err := sess.KeepAlive(ctx); err != nil {
				return nil, err
			}
			renewed = time.Now()
		}
		var tok events.Token
		for _, holder := range []string{"writer", ""} {
			sleep(ctx, 20*time.Millisecond+time.Duration(rand.N(10))*time.Millisecond)
			start := time.Now()
			if err := change(ctx, sess, &tok, holder != ""); err != nil {
				return nil, err
			}
			at, err := waitHolder(ctx, ch, holder)
			if err != nil {
				return nil, err
			}
			out = append(out, at.Sub(start))
		}
	}
	return out, nil
}

// change acquires "observed" (recording its token) or releases it.
func change(ctx context.Context, sess backends.Session, tok *events.Token, acquire bool) error {
	if !acquire {
		return sess.Release(ctx, "observed", *tok, 0)
	}
	t, err := sess.Acquire(ctx, "observed", 0)
	*tok = t
	return err
}

// waitHolder waits for an event naming holder ("" for free) and returns
// when it was received.
func waitHolder(ctx context.Context, ch <-chan events.Event, holder string) (time.Time, error) {
	timer := time.NewTimer(eventTimeout)
	defer timer.Stop()
	for {
		select {
		case e, ok := <-ch:
			if !ok {
				return time.Time{}, fmt.Errorf("observer closed")
			}
			if e.Holder == holder {
				return time.Now(), nil
			}
		case <-timer.C:
			return time.Time{}, fmt.Errorf("no event for holder %q within %v", holder, eventTimeout)
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		}
	}
}

// etcdObserve times etcd's own Election.Observe: another session
// campaigns, and the observer's channel reports its leadership.
func (b *bench) etcdObserve(ctx context.Context, s *system) ([]time.Duration, error) {
	var obs, cand etcdLocker
	for _, l := range []*etcdLocker{&obs, &cand} {
		lk, err := etcdPeerByName(s, "etcd Election").open(ctx)
		if err != nil {
			return nil, err
		}
		defer lk.close()
		*l = lk.(etcdLocker)
	}
	octx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := concurrency.NewElection(obs.sess, "/peer/observed").Observe(octx)
	el := concurrency.NewElection(cand.sess, "/peer/observed")
	var out []time.Duration
	for i := range b.cfg.EventSamples {
		sleep(ctx, 20*time.Millisecond+time.Duration(rand.N(10))*time.Millisecond)
		val := fmt.Sprint("leader-", i)
		start := time.Now()
		if err := el.Campaign(ctx, val); err != nil {
			return nil, err
		}
		if err := waitValue(ctx, ch, val); err != nil {
			return nil, err
		}
		out = append(out, time.Since(start))
		if err := el.Resign(ctx); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func etcdPeerByName(s *system, name string) peer {
	for _, p := range s.peers {
		if p.name == name {
			return p
		}
	}
	panic("no peer " + name) // a bug in this program, not bad input
}

// waitValue waits for the observed leader's value to be val.
func waitValue(ctx context.Context, ch <-chan *clientv3.GetResponse, val string) error {
	timer := time.NewTimer(eventTimeout)
	defer timer.Stop()
	for {
		select {
		case r, ok := <-ch:
			if !ok {
				return fmt.Errorf("Observe closed")
			}
			if len(r.Kvs) > 0 && string(r.Kvs[0].Value) == val {
				return nil
			}
		case <-timer.C:
			return fmt.Errorf("no leader %q within %v", val, eventTimeout)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
