package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/hustingstest"
)

// handoverRetry is the campaigns' retry interval in the handover workload:
// after Resign a campaign waits at least this long before trying again.
const handoverRetry = 100 * time.Millisecond

// pollHandovers bounds the handovers measured where waiters poll: each
// takes a poll and more (see campaignHandovers).
const pollHandovers = 50

// eventTimeout bounds every wait for an event; past it the run fails.
const eventTimeout = 15 * time.Second

// seen is an event and when its reader received it.
type seen struct {
	from *campaign.Campaign
	e    events.Event
	at   time.Time
}

// follow forwards every event of c, stamped on receipt, to out until c's
// channel closes. It runs in wg.
func follow(wg *sync.WaitGroup, c *campaign.Campaign, out chan<- seen) {
	wg.Go(func() {
		for e := range c.Events() {
			out <- seen{from: c, e: e, at: time.Now()}
		}
	})
}

// nextElected waits for the next Elected event on ch, also noting the
// Revoked events it passes.
func nextElected(ctx context.Context, ch <-chan seen) (seen, []seen, error) {
	var revoked []seen
	timer := time.NewTimer(eventTimeout)
	defer timer.Stop()
	for {
		select {
		case s := <-ch:
			if s.e.Kind == events.Elected {
				return s, revoked, nil
			}
			revoked = append(revoked, s)
		case <-timer.C:
			return seen{}, revoked, fmt.Errorf("no Elected event within %v", eventTimeout)
		case <-ctx.Done():
			return seen{}, revoked, ctx.Err()
		}
	}
}

// handover measures graceful handovers: from the holder's Resign to the
// other candidate's Elected event on its channel, and for each peer from
// the holder's unlock to the waiter's lock returning.
func (b *bench) handover(ctx context.Context, s *system) error {
	samples, err := b.campaignHandovers(ctx, s)
	if err != nil {
		return fmt.Errorf("campaigns: %w", err)
	}
	h := Summarize(samples)
	hrow := Row{Workload: "handover", Backend: s.name, Subject: "hustings Resign → Elected", Latency: &h}
	if s.poll > 0 {
		hrow.Note = fmt.Sprintf("the waiter, in another process, polls every %v (the default): %d handovers", s.poll, len(samples))
	}
	b.logf("  %-30s p50 %-9s p99 %s", hrow.Subject, fmtDur(h.P50), fmtDur(h.P99))
	var rows []Row
	for _, p := range s.peers {
		samples, err := b.peerHandovers(ctx, p)
		if err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
		d := Summarize(samples)
		rows = append(rows, Row{Workload: "handover", Backend: s.name, Subject: p.name + " unlock → lock", Latency: &d,
			Baseline: hrow.Subject, Ratio: ratio(float64(d.P50), float64(h.P50)), Note: p.note})
		b.logf("  %-30s p50 %-9s p99 %s", p.name, fmtDur(d.P50), fmtDur(d.P99))
	}
	b.report.Add(hrow)
	for _, r := range rows {
		b.report.Add(r)
	}
	return nil
}

// campaignHandovers runs two campaigns on one name, each on a client of
// its own, and makes the leader resign again and again. Where waiters
// poll, the campaigns retry a poll later than elsewhere: a resigner
// waits a retry interval before it tries again, and one that tried
// before the waiter's next poll would win the lock back.
func (b *bench) campaignHandovers(ctx context.Context, s *system) ([]time.Duration, error) {
	ttl := min(10*time.Second, s.maxTTL)
	retry, n := handoverRetry, b.cfg.Handovers
	if s.poll > 0 {
		retry, n = s.poll+handoverRetry, min(n, pollHandovers)
	}
	var cs []*campaign.Campaign
	var wg sync.WaitGroup
	ch := make(chan seen, 16)
	rctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		wg.Wait()
	}()
	for _, id := range []string{"a", "b"} {
		be, closer, err := s.fresh()
		if err != nil {
			return nil, err
		}
		defer closer()
		c, err := campaign.New(be, "handover", campaign.WithID(id), campaign.WithTTL(ttl), campaign.WithRetry(retry))
		if err != nil {
			return nil, err
		}
		cs = append(cs, c)
		wg.Go(func() { _ = c.Run(rctx) })
		follow(&wg, c, ch)
	}
	first, _, err := nextElected(ctx, ch)
	if err != nil {
		return nil, err
	}
	leader := first.from
	var out []time.Duration
	for range n {
		// Let the other candidate's retry pause pass: it waits on its watch.
		sleep(ctx, 2*retry+time.Duration(rand.N(50))*time.Millisecond)
		start := time.Now()
		if err := leader.Resign(ctx); err != nil {
			return nil, err
		}
		next, _, err := nextElected(ctx, ch)
		if err != nil {
			return nil, err
		}
		if next.from == leader {
			return nil, errors.New("the resigning campaign was elected again")
		}
		out = append(out, next.at.Sub(start))
		leader = next.from
	}
	return out, nil
}

// peerHandovers makes one candidate of p hold a lock while another waits
// for it, then lets the holder unlock: from the moment the holder's
// critical section ends to the moment the waiter's begins.
func (b *bench) peerHandovers(ctx context.Context, p peer) ([]time.Duration, error) {
	var ls []locker
	defer func() {
		for _, l := range ls {
			l.close()
		}
	}()
	for range 2 {
		l, err := p.open(ctx)
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
	}
	var out []time.Duration
	for i := range b.cfg.PeerHandovers {
		d, err := handOnce(ctx, ls[i%2], ls[(i+1)%2], p.gap)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// handOnce: holder takes the lock, waiter asks for it, and after a pause
// (longer by up to gap) the holder lets go.
func handOnce(ctx context.Context, holder, waiter locker, gap time.Duration) (time.Duration, error) {
	rctx, cancel := context.WithTimeout(ctx, eventTimeout)
	defer cancel()
	held, release := make(chan struct{}), make(chan struct{})
	var released, got time.Time
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	wg.Go(func() {
		errs <- holder.run(rctx, "handover", func() {
			close(held)
			<-release
			released = time.Now()
		})
	})
	select {
	case <-held:
	case err := <-errs:
		return 0, err
	}
	wg.Go(func() { errs <- waiter.run(rctx, "handover", func() { got = time.Now() }) })
	// The waiter is now in its retry loop or on its watch; a random pause
	// samples every phase of a retry loop.
	sleep(ctx, 50*time.Millisecond+time.Duration(rand.N(int64(max(20*time.Millisecond, gap)))))
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return 0, err
		}
	}
	return got.Sub(released), nil
}

// failoverSubject is the subject of Hustings' failover row, which the
// chart, the targets and the summary look up; client-go's rows beside it
// on Kubernetes have subjects of their own.
const failoverSubject = "hustings crash → Elected"

// failover measures crash failovers: a holder whose backend calls start to
// hang (crash.Backend: no keep-alive, no release), and a waiting
// candidate on a client of its own: from the crash to the waiter's Elected
// event, against the TTL.
func (b *bench) failover(ctx context.Context, s *system) error {
	var samples []time.Duration
	unsafe := 0
	var closing sync.WaitGroup // crashed holders take up to a TTL to close
	defer closing.Wait()
	for i := range b.cfg.Failovers {
		d, overlap, err := b.failOnce(ctx, s, fmt.Sprintf("failover-%d", i), &closing)
		if err != nil {
			return err
		}
		samples = append(samples, d)
		if overlap {
			unsafe++
		}
	}
	d := Summarize(samples)
	b.report.Add(Row{Workload: "failover", Backend: s.name, Subject: failoverSubject, Latency: &d,
		Param:    fmt.Sprintf("TTL %v, retry %v", b.cfg.FailoverTTL, b.cfg.FailoverTry),
		Values:   map[string]float64{"ttl_ns": float64(b.cfg.FailoverTTL), "overlaps": float64(unsafe)},
		Baseline: "TTL", Ratio: ratio(float64(d.P99), float64(b.cfg.FailoverTTL))})
	b.logf("  crash → Elected p50 %-9s p99 %s (TTL %v); elected before the holder's Revoked: %d", fmtDur(d.P50), fmtDur(d.P99), b.cfg.FailoverTTL, unsafe)
	if s.kube != nil {
		return b.clientGoFailovers(ctx, s)
	}
	return nil
}

// failOnce runs one crash failover on the lock name. overlap reports
// whether the waiter was elected before the crashed holder had revoked its
// own term (it never should be).
func (b *bench) failOnce(ctx context.Context, s *system, name string, closing *sync.WaitGroup) (time.Duration, bool, error) {
	opts := []campaign.Option{campaign.WithTTL(b.cfg.FailoverTTL), campaign.WithRetry(b.cfg.FailoverTry)}
	hb, closeH, err := s.fresh()
	if err != nil {
		return 0, false, err
	}
	link := hustingstest.NewCrashable(hb)
	holder, err := campaign.New(link, name, append(opts, campaign.WithID("holder"))...)
	if err != nil {
		closeH()
		return 0, false, err
	}
	var wg sync.WaitGroup
	hch := make(chan seen, 16)
	wg.Go(func() { _ = holder.Run(ctx) })
	follow(&wg, holder, hch)
	defer closing.Go(func() { // after the crash, Close waits out the hung calls
		_ = holder.Close()
		wg.Wait()
		closeH()
	})
	if _, _, err := nextElected(ctx, hch); err != nil {
		return 0, false, err
	}
	wb, closeW, err := s.fresh()
	if err != nil {
		return 0, false, err
	}
	defer closeW()
	waiter, err := campaign.New(wb, name, append(opts, campaign.WithID("waiter"))...)
	if err != nil {
		return 0, false, err
	}
	var wwg sync.WaitGroup
	wch := make(chan seen, 16)
	wwg.Go(func() { _ = waiter.Run(ctx) })
	follow(&wwg, waiter, wch)
	defer wwg.Wait()
	defer waiter.Close()
	// A random moment within the keep-alive cycle.
	sleep(ctx, 200*time.Millisecond+time.Duration(rand.N(int64(b.cfg.FailoverTTL/3))))
	start := time.Now()
	link.Crash()
	next, _, err := nextElected(ctx, wch)
	if err != nil {
		return 0, false, err
	}
	overlap := true
	for _, r := range drain(hch) {
		if r.e.Kind == events.Revoked && !r.e.Time.After(next.e.Time) {
			overlap = false
		}
	}
	return next.at.Sub(start), overlap, nil
}

// drain returns what ch holds now.
func drain(ch <-chan seen) []seen {
	var out []seen
	for {
		select {
		case s := <-ch:
			out = append(out, s)
		default:
			return out
		}
	}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

var _ backends.Backend = (*hustingstest.Crashable)(nil)
