package redis_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/hustings/hustings/backends/redis"
	"github.com/hustings/hustings/backends/redis/redistest"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
)

// BenchmarkAcquireRelease: Acquire and Release of a free lock on an open
// session (two round trips, each one script that reads the session key).
func BenchmarkAcquireRelease(b *testing.B) {
	srv := redistest.Start(b)
	be := newBackend(b, srv.Addr())
	ctx := b.Context()
	s, err := be.Open(ctx, "bench", time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close(context.Background())
	var times []time.Duration
	for b.Loop() {
		start := time.Now()
		tok, err := s.Acquire(ctx, "bench", 0)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Release(ctx, "bench", tok, 0); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(start))
	}
	reportMedian(b, times)
}

// BenchmarkRoundTrip: one PING, the baseline for the one above.
func BenchmarkRoundTrip(b *testing.B) {
	srv := redistest.Start(b)
	client := redistest.Client(b, srv.Addr())
	ctx := b.Context()
	var times []time.Duration
	for b.Loop() {
		start := time.Now()
		if err := client.Ping(ctx).Err(); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(start))
	}
	reportMedian(b, times)
}

// reportMedian reports the median of the per-op times as p50-ns.
func reportMedian(b *testing.B, times []time.Duration) {
	if len(times) == 0 {
		return
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Nanoseconds()), "p50-ns")
}

// BenchmarkKeepAlive: KeepAlive of a session holding 0, 1,000 and 10,000
// locks on one server: one round trip each, the PEXPIRE and a script that
// reads every lock (while the server runs nothing else).
func BenchmarkKeepAlive(b *testing.B) {
	srv := redistest.Start(b)
	be := newBackend(b, srv.Addr())
	ctx := b.Context()
	for _, locks := range []int{0, 1000, 10000} {
		b.Run(fmt.Sprintf("locks=%d", locks), func(b *testing.B) {
			s, err := be.Open(ctx, "bench", time.Minute)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close(context.Background())
			for i := range locks {
				if _, err := s.Acquire(ctx, fmt.Sprintf("lock-%d", i), 0); err != nil {
					b.Fatal(err)
				}
			}
			var times []time.Duration
			for b.Loop() {
				start := time.Now()
				if err := s.KeepAlive(ctx); err != nil {
					b.Fatal(err)
				}
				times = append(times, time.Since(start))
			}
			reportMedian(b, times)
		})
	}
}

// BenchmarkRunIfLeaderOnSession: campaign.RunIfLeader on a campaign.Session
// (an acquire and a release, two round trips) from 1 and 8 goroutines,
// each on a name of its own, beside redislock's two commands (SET NX PX,
// then a script that deletes the key if it is still ours).
func BenchmarkRunIfLeaderOnSession(b *testing.B) {
	srv := redistest.Start(b)
	client := redistest.Client(b, srv.Addr())
	be, err := redis.New(client)
	if err != nil {
		b.Fatal(err)
	}
	sess, err := campaign.NewSession(be, campaign.WithID("bench"), campaign.WithTTL(4*time.Second))
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- sess.Run(context.Background()) }()
	defer func() {
		_ = sess.Close()
		<-done
	}()
	unlock := goredis.NewScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`)
	runs := map[string]func(ctx context.Context, name string) error{
		"hustings": func(ctx context.Context, name string) error {
			res, err := campaign.RunIfLeader(ctx, be, name, func(context.Context, events.Token) (int, error) { return 0, nil },
				campaign.WithSession(sess), campaign.WithTTL(4*time.Second))
			if err == nil && res.Outcome != campaign.Succeeded {
				err = fmt.Errorf("outcome %v: %v", res.Outcome, res.Err)
			}
			return err
		},
		"setnx": func(ctx context.Context, name string) error {
			ok, err := client.SetNX(ctx, "peer:"+name, "v", 10*time.Second).Result()
			if err != nil || !ok {
				return fmt.Errorf("set nx: %v %v", ok, err)
			}
			return unlock.Run(ctx, client, []string{"peer:" + name}, "v").Err()
		},
	}
	for _, subject := range []string{"hustings", "setnx"} {
		for _, g := range []int{1, 8} {
			b.Run(fmt.Sprintf("%s/goroutines=%d", subject, g), func(b *testing.B) {
				var seq atomic.Int64
				if err := client.ConfigResetStat(b.Context()).Err(); err != nil {
					b.Fatal(err)
				}
				b.SetParallelism(max(g/runtime.GOMAXPROCS(0), 1))
				b.RunParallel(func(pb *testing.PB) {
					name := fmt.Sprintf("tp-%d-%d", g, seq.Add(1))
					for pb.Next() {
						if err := runs[subject](b.Context(), name); err != nil {
							b.Error(err)
							return
						}
					}
				})
				b.StopTimer()
				reportServerTime(b, client)
			})
		}
	}
}

// reportServerTime reports the server's CPU time in commands per op
// (INFO commandstats since the last CONFIG RESETSTAT) as server-ns/op,
// and the commands themselves, each with its calls per op, in the log.
func reportServerTime(b *testing.B, client *goredis.Client) {
	info, err := client.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	var per []string
	for line := range strings.Lines(info) {
		cmd, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(cmd, "cmdstat_") {
			continue
		}
		var calls, usec float64
		for field := range strings.SplitSeq(rest, ",") {
			k, v, _ := strings.Cut(field, "=")
			switch k {
			case "calls":
				calls, _ = strconv.ParseFloat(v, 64)
			case "usec":
				usec, _ = strconv.ParseFloat(v, 64)
			}
		}
		total += usec
		per = append(per, fmt.Sprintf("%s %.2f calls %.2f µs", strings.TrimPrefix(cmd, "cmdstat_"), calls/float64(b.N), usec/float64(b.N)))
	}
	b.ReportMetric(total*1000/float64(b.N), "server-ns/op")
	b.Logf("per op: %s", strings.Join(per, "; "))
}

// BenchmarkContendedOnSession: 8 candidates, each with a client, backend
// and session of its own, take turns on one name with RunIfLeader
// WithWait; an op is one critical section. It reports the longest wait.
func BenchmarkContendedOnSession(b *testing.B) {
	srv := redistest.Start(b)
	const candidates = 8
	runs := make([]func(ctx context.Context, cs func()) error, candidates)
	for i := range runs {
		be := newBackend(b, srv.Addr())
		sess, err := campaign.NewSession(be, campaign.WithID(fmt.Sprintf("c%d", i)), campaign.WithTTL(4*time.Second))
		if err != nil {
			b.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- sess.Run(context.Background()) }()
		b.Cleanup(func() {
			_ = sess.Close()
			<-done
		})
		runs[i] = func(ctx context.Context, cs func()) error {
			res, err := campaign.RunIfLeader(ctx, be, "contended", func(context.Context, events.Token) (int, error) { cs(); return 0, nil },
				campaign.WithSession(sess), campaign.WithTTL(4*time.Second), campaign.WithWait(time.Minute), campaign.WithRetry(100*time.Millisecond))
			if err == nil && res.Outcome != campaign.Succeeded {
				err = fmt.Errorf("outcome %v: %v", res.Outcome, res.Err)
			}
			return err
		}
	}
	var left atomic.Int64
	var longest atomic.Int64
	left.Store(int64(b.N))
	b.ResetTimer()
	var wg sync.WaitGroup
	for _, run := range runs {
		wg.Go(func() {
			for left.Load() > 0 {
				asked := time.Now()
				err := run(b.Context(), func() {
					left.Add(-1)
					w := int64(time.Since(asked))
					for cur := longest.Load(); w > cur && !longest.CompareAndSwap(cur, w); cur = longest.Load() {
					}
				})
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(longest.Load())/1e6, "longest-ms")
}
