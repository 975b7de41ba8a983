package hub_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/hustings/hustings/backends/internal/hub"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// state is the per-name state of the tests' hubs.
type state struct {
	due time.Time
	set bool
}

// fake is a transport: each run's feed is confirmed once gate opens (at
// once if gate is nil) with fail, and returns when its context ends or a
// value arrives on its run's brk.
type fake struct {
	gate chan struct{}
	fail error

	mu     sync.Mutex
	runs   []*hub.Run
	brks   []chan error
	ended  []chan struct{}
	joins  []string
	leaves []string
}

func (f *fake) open(ctx context.Context, r *hub.Run) func() error {
	brk, ended := make(chan error, 1), make(chan struct{})
	f.mu.Lock()
	f.runs, f.brks, f.ended = append(f.runs, r), append(f.brks, brk), append(f.ended, ended)
	f.mu.Unlock()
	return func() error {
		defer close(ended)
		if f.gate != nil {
			select {
			case <-f.gate:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		r.Ready(f.fail)
		if f.fail != nil {
			return f.fail
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-brk:
			return err
		}
	}
}

// run returns the i-th run, its break channel and the channel closed when
// its feed returned.
func (f *fake) run(i int) (*hub.Run, chan error, chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.runs[i], f.brks[i], f.ended[i]
}

func (f *fake) opens() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.runs)
}

func (f *fake) newHub(cfg hub.Config[state]) *hub.Hub[state] {
	cfg.Open = f.open
	return hub.New(cfg)
}

// watch is Hub.Watch that fails the test on an error.
func watch(t *testing.T, ctx context.Context, h *hub.Hub[state], name string) *hub.Sub[state] {
	t.Helper()
	w, err := h.Watch(ctx, name)
	if err != nil {
		t.Fatalf("Watch(%q): %v", name, err)
	}
	return w
}

// pending reports whether ch holds a signal, and closed whether it is
// closed; it does not wait.
func pending(ch <-chan struct{}) (signal, closed bool) {
	select {
	case _, ok := <-ch:
		return ok, !ok
	default:
		return false, false
	}
}

func TestWatchWaitsForTheFeedAndMissesNoSignalAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fake{gate: make(chan struct{})}
		h := f.newHub(hub.Config[state]{})
		got := make(chan *hub.Sub[state])
		go func() { got <- watch(t, t.Context(), h, "a") }()
		synctest.Wait()
		select {
		case <-got:
			t.Fatal("Watch returned before the feed was ready")
		default:
		}
		close(f.gate)
		w := <-got
		r, _, _ := f.run(0)
		h.Signal(r, "a")
		if s, _ := pending(w.C()); !s {
			t.Fatal("a signal after Watch returned was missed")
		}
		h.Signal(r, "b") // not watched: nothing
		if s, _ := pending(w.C()); s {
			t.Fatal("a signal of another name reached the watch")
		}
		w.End()
	})
}

func TestSignalsCoalesce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fake{}
		h := f.newHub(hub.Config[state]{})
		w := watch(t, t.Context(), h, "a")
		r, _, _ := f.run(0)
		for range 3 {
			h.Signal(r, "a")
		}
		h.SignalAll(r)
		if s, _ := pending(w.C()); !s {
			t.Fatal("no signal")
		}
		if s, _ := pending(w.C()); s {
			t.Fatal("four signals left more than one pending")
		}
		w.End()
		if _, closed := pending(w.C()); !closed {
			t.Fatal("End did not close the channel")
		}
		w.End() // again: nothing
	})
}

func TestBrokenFeedClosesEveryChannel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fake{}
		h := f.newHub(hub.Config[state]{})
		ws := []*hub.Sub[state]{watch(t, t.Context(), h, "a"), watch(t, t.Context(), h, "a"), watch(t, t.Context(), h, "b")}
		old, brk, ended := f.run(0)
		brk <- errors.New("link cut")
		<-ended
		synctest.Wait()
		for i, w := range ws {
			if _, closed := pending(w.C()); !closed {
				t.Fatalf("watch %d not closed by the broken feed", i)
			}
			w.End() // after the break: nothing
		}
		w := watch(t, t.Context(), h, "a")
		if f.opens() != 2 {
			t.Fatalf("%d runs, want a new one after the break", f.opens())
		}
		h.Signal(old, "a") // the broken run's late news: ignored
		if s, _ := pending(w.C()); s {
			t.Fatal("a broken run's signal reached the new run's watch")
		}
		w.End()
	})
}

func TestFeedThatFailsFailsWatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		boom := errors.New("no listen")
		f := &fake{fail: boom}
		h := f.newHub(hub.Config[state]{})
		for i := range 2 {
			if _, err := h.Watch(t.Context(), "a"); !errors.Is(err, boom) {
				t.Fatalf("Watch %d: %v, want the feed's error", i, err)
			}
		}
		if f.opens() != 2 {
			t.Fatalf("%d runs, want one per failed Watch", f.opens())
		}
	})
}

func TestCtxEndRemovesOneWatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fake{}
		h := f.newHub(hub.Config[state]{})
		ctx1, cancel1 := context.WithCancel(t.Context())
		w1 := watch(t, ctx1, h, "a")
		ctx2, cancel2 := context.WithCancel(t.Context())
		defer cancel2()
		w2 := watch(t, ctx2, h, "a")
		cancel1()
		synctest.Wait()
		if _, closed := pending(w1.C()); !closed {
			t.Fatal("ctx end did not close its watch")
		}
		r, _, ended := f.run(0)
		h.Signal(r, "a")
		if s, _ := pending(w2.C()); !s {
			t.Fatal("the other watch of the name lost its signal")
		}
		select {
		case <-ended:
			t.Fatal("the feed stopped while a watch remained")
		default:
		}
		cancel2()
		<-ended
	})
}

func TestWatchWhoseCtxEndsBeforeTheFeedIsReady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fake{gate: make(chan struct{})}
		h := f.newHub(hub.Config[state]{})
		ctx, cancel := context.WithCancel(t.Context())
		go func() {
			synctest.Wait()
			cancel()
		}()
		if _, err := h.Watch(ctx, "a"); !errors.Is(err, context.Canceled) {
			t.Fatalf("Watch: %v, want context.Canceled", err)
		}
		_, _, ended := f.run(0)
		<-ended // its run stopped with it
	})
}

func TestFeedStopsWithTheLastWatchAndRestarts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fake{}
		h := f.newHub(hub.Config[state]{})
		a, b := watch(t, t.Context(), h, "a"), watch(t, t.Context(), h, "b")
		_, _, ended := f.run(0)
		a.End()
		synctest.Wait()
		select {
		case <-ended:
			t.Fatal("the feed stopped while a watch remained")
		default:
		}
		b.End()
		<-ended
		c := watch(t, t.Context(), h, "c")
		if f.opens() != 2 {
			t.Fatalf("%d runs, want a second one", f.opens())
		}
		r, _, ended := f.run(1)
		h.Signal(r, "c")
		if s, _ := pending(c.C()); !s {
			t.Fatal("the restarted feed's signal was lost")
		}
		c.End()
		<-ended
	})
}

func TestJoinAnswersItsWatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fake{}
		refuse := errors.New("refused")
		var once bool
		h := f.newHub(hub.Config[state]{
			Join: func(_ *hub.Run, name string) error {
				f.joins = append(f.joins, name) // under the Hub's lock
				if name == "refused" && !once {
					once = true
					return refuse
				}
				return nil
			},
		})
		if _, err := h.Watch(t.Context(), "refused"); !errors.Is(err, refuse) {
			t.Fatalf("Watch: %v, want the join's error", err)
		}
		got := make(chan error, 2)
		for range 2 {
			go func() {
				w, err := h.Watch(t.Context(), "a")
				if err == nil {
					defer w.End()
				}
				got <- err
			}()
		}
		synctest.Wait()
		if len(got) != 0 {
			t.Fatal("Watch returned before its join was answered")
		}
		r, _, _ := f.run(f.opens() - 1)
		h.Joined(r, "a", nil)
		for range 2 {
			if err := <-got; err != nil {
				t.Fatal(err)
			}
		}
		go func() { // joins again after a failure
			w, err := h.Watch(t.Context(), "refused")
			if err == nil {
				w.End()
			}
			got <- err
		}()
		synctest.Wait()
		r, _, _ = f.run(f.opens() - 1)
		h.Joined(r, "refused", nil)
		if err := <-got; err != nil {
			t.Fatal(err)
		}
		if want := []string{"refused", "a", "refused"}; !slices.Equal(f.joins, want) {
			t.Fatalf("joins %v, want %v", f.joins, want)
		}
	})
}

func TestLingeringNameStaysJoined(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fake{}
		var h *hub.Hub[state]
		h = f.newHub(hub.Config[state]{
			Linger: 200 * time.Millisecond,
			Join: func(r *hub.Run, name string) error {
				f.joins = append(f.joins, name)
				go h.Joined(r, name, nil) // the feed's answer, later
				return nil
			},
			Leave: func(_ *hub.Run, name string) { f.leaves = append(f.leaves, name) },
		})
		a, b := watch(t, t.Context(), h, "a"), watch(t, t.Context(), h, "b")
		a.End()
		time.Sleep(100 * time.Millisecond)
		a = watch(t, t.Context(), h, "a") // within the linger: joined still
		b.End()
		time.Sleep(300 * time.Millisecond)
		synctest.Wait()
		if want := []string{"a", "b"}; !slices.Equal(f.joins, want) || !slices.Equal(f.leaves, []string{"b"}) {
			t.Fatalf("joins %v, leaves %v: want %v and [b]", f.joins, f.leaves, want)
		}
		_, _, ended := f.run(0)
		a.End()
		time.Sleep(300 * time.Millisecond)
		<-ended // the last name lingered out: the run with it, without a Leave
		if len(f.leaves) != 1 {
			t.Fatalf("leaves %v: a run that ends leaves nothing", f.leaves)
		}
	})
}

func TestDueNamesAndUntil(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fake{}
		h := f.newHub(hub.Config[state]{Due: func(s *state) (time.Time, bool) { return s.due, s.set }})
		a, b := watch(t, t.Context(), h, "a"), watch(t, t.Context(), h, "b")
		r, _, _ := f.run(0)
		if _, ok := h.Next(r); ok {
			t.Fatal("a name is due with no due time set")
		}
		now := time.Now()
		h.With(r, func(v hub.View[state]) {
			*v.State("a") = state{due: now.Add(time.Second), set: true}
			*v.State("b") = state{due: now.Add(2 * time.Second), set: true}
		})
		if next, ok := h.Next(r); !ok || !next.Equal(now.Add(time.Second)) {
			t.Fatalf("Next %v %v, want a's due time", next, ok)
		}
		if due := h.Due(r, now.Add(time.Second)); !slices.Equal(due, []string{"a"}) {
			t.Fatalf("Due %v, want [a]", due)
		}
		ctx, stop := r.Until(now.Add(time.Hour)) // the Poke of b's first Watch is pending
		if ctx.Err() == nil {
			t.Fatal("Until missed a Poke made before it")
		}
		stop()
		ctx, stop = r.Until(now.Add(time.Hour))
		go r.Poke()
		<-ctx.Done()
		stop()
		if time.Since(now) >= time.Hour {
			t.Fatal("Poke did not end Until")
		}
		a.End()
		b.End()
	})
}

func TestKeepHoldsTheRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fake{}
		h := f.newHub(hub.Config[state]{})
		k := new(int)
		r := h.Keep(k)
		synctest.Wait()
		if h.Kept(k) != r {
			t.Fatal("Kept: not the run it keeps")
		}
		w := watch(t, t.Context(), h, "a")
		w.End()
		n := 0
		h.With(r, func(v hub.View[state]) {
			for range v.Keepers() {
				n++
			}
		})
		_, brk, ended := f.run(0)
		select {
		case <-ended:
			t.Fatal("the run stopped with a keeper")
		default:
		}
		if n != 1 {
			t.Fatalf("%d keepers, want 1", n)
		}
		brk <- errors.New("link cut")
		<-ended
		synctest.Wait()
		if h.Kept(k) != nil {
			t.Fatal("a broken run still keeps its keeper")
		}
		r = h.Keep(k)
		h.Unkeep(k)
		_, _, ended = f.run(1)
		<-ended
	})
}

func TestNameWaitingForItsJoinIsNotDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fake{}
		var h *hub.Hub[state]
		h = f.newHub(hub.Config[state]{
			Join: func(r *hub.Run, name string) error {
				f.joins = append(f.joins, name)
				if name == "b" {
					go h.Joined(r, name, nil)
				}
				return nil
			},
			Leave: func(_ *hub.Run, name string) { f.leaves = append(f.leaves, name) },
		})
		b := watch(t, t.Context(), h, "b") // keeps the run
		ctx, cancel := context.WithCancel(t.Context())
		go func() {
			synctest.Wait()
			cancel()
		}()
		if _, err := h.Watch(ctx, "a"); !errors.Is(err, context.Canceled) {
			t.Fatalf("Watch: %v, want context.Canceled", err)
		}
		got := make(chan *hub.Sub[state])
		go func() { got <- watch(t, t.Context(), h, "a") }()
		synctest.Wait()
		if want := []string{"b", "a"}; !slices.Equal(f.joins, want) {
			t.Fatalf("joins %v, want %v: a name with a join in flight was dropped", f.joins, want)
		}
		r, _, _ := f.run(0)
		h.Joined(r, "a", nil) // the first join's answer readies the second Watch
		a := <-got
		a.End()
		if !slices.Equal(f.leaves, []string{"a"}) {
			t.Fatalf("leaves %v, want [a]", f.leaves)
		}
		h.Joined(r, "a", nil) // no join in flight: nothing
		b.End()
	})
}

// BenchmarkSignal is one signal to one watch of a name among many: no
// allocation.
func BenchmarkSignal(b *testing.B) {
	f := &fake{}
	h := f.newHub(hub.Config[state]{})
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	for i := range 100 {
		if _, err := h.Watch(ctx, string(rune('a'+i%26))+string(rune('a'+i/26))); err != nil {
			b.Fatal(err)
		}
	}
	w, err := h.Watch(ctx, "x")
	if err != nil {
		b.Fatal(err)
	}
	r, _, ended := f.run(0)
	b.ReportAllocs()
	for b.Loop() {
		h.Signal(r, "x")
		<-w.C()
	}
	cancel()
	<-ended
}

func TestWatchOnlyWakesForItsKinds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const taken, freed hub.Kinds = 1, 2
		f := &fake{}
		h := f.newHub(hub.Config[state]{})
		all := watch(t, t.Context(), h, "a")
		only, err := h.WatchOnly(t.Context(), "a", freed)
		if err != nil {
			t.Fatal(err)
		}
		r, _, ended := f.run(0)
		h.With(r, func(v hub.View[state]) { v.SignalKinds("a", taken) })
		if s, _ := pending(all.C()); !s {
			t.Fatal("a watch of every kind missed a signal")
		}
		if s, _ := pending(only.C()); s {
			t.Fatal("a signal of another kind woke a WatchOnly")
		}
		h.With(r, func(v hub.View[state]) { v.SignalKinds("a", freed) })
		if s, _ := pending(only.C()); !s {
			t.Fatal("a signal of its kind did not wake a WatchOnly")
		}
		h.Signal(r, "a") // every kind
		if s, _ := pending(only.C()); !s {
			t.Fatal("Signal did not wake a WatchOnly")
		}
		all.End()
		only.End()
		<-ended
	})
}

func TestBreakEndsTheRunBeforeItsFunctionReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		boom := errors.New("poll failed")
		h := hub.New(hub.Config[state]{Open: func(ctx context.Context, r *hub.Run) func() error {
			r.Ready(nil)
			return func() error {
				<-ctx.Done()
				<-release // a second goroutine winding down
				return nil
			}
		}})
		w := watch(t, t.Context(), h, "a")
		r := h.Current()
		h.Break(r, boom)
		if _, closed := pending(w.C()); !closed {
			t.Fatal("Break did not close the run's watches")
		}
		if h.Current() != nil || r.Context().Err() == nil {
			t.Fatal("Break did not end the run")
		}
		synctest.Wait()
		select {
		case <-r.Done():
			t.Fatal("Done closed before the run's function returned")
		default:
		}
		close(release)
		<-r.Done()
	})
}

func TestUnkeepReturnsTheRunItStopped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fake{gate: make(chan struct{})}
		h := f.newHub(hub.Config[state]{})
		k1, k2 := new(int), new(int)
		r := h.Keep(k1)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if err := r.Wait(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("Wait before the feed is ready, ctx ended: %v", err)
		}
		close(f.gate)
		if err := r.Wait(t.Context()); err != nil {
			t.Fatalf("Wait: %v", err)
		}
		h.Keep(k2)
		if got := h.Unkeep(k1); got != nil {
			t.Fatal("Unkeep reported a run stopped while another keeper remained")
		}
		_, _, ended := f.run(0)
		if got := h.Unkeep(k2); got != r {
			t.Fatal("Unkeep of the last keeper did not report the run it stopped")
		}
		<-r.Done()
		<-ended
		if got := h.Unkeep(k2); got != nil {
			t.Fatal("Unkeep with no run reported one")
		}
	})
}

func TestReachedWaitsForTheFeedsProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fake{}
		h := f.newHub(hub.Config[state]{})
		w := watch(t, t.Context(), h, "a")
		r, brk, ended := f.run(0)
		if r.Advanced() != 0 || r.Reached(t.Context(), 1, time.Second) {
			t.Fatal("a feed that reported no progress reached a version")
		}
		go func() {
			time.Sleep(time.Second)
			r.Advance(5)
			r.Advance(3) // older: nothing
		}()
		if !r.Reached(t.Context(), 4, time.Minute) {
			t.Fatal("Reached missed the feed's progress")
		}
		if r.Advanced() != 5 {
			t.Fatalf("Advanced %d, want 5", r.Advanced())
		}
		got := make(chan bool)
		go func() { got <- r.Reached(t.Context(), 9, time.Hour) }()
		synctest.Wait()
		brk <- errors.New("link cut")
		<-ended
		if <-got {
			t.Fatal("Reached of a broken run")
		}
		if r.Reached(t.Context(), 5, time.Hour) {
			t.Fatal("a broken run reached a version it had delivered")
		}
		w.End()
	})
}

func TestWaitOutlastsARunStoppedByItsLastWatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		h := hub.New(hub.Config[state]{Open: func(ctx context.Context, r *hub.Run) func() error {
			return func() error {
				r.Ready(nil)
				<-ctx.Done()
				<-release // a client slow to stop its feed
				return nil
			}
		}})
		if err := h.Wait(t.Context()); err != nil {
			t.Fatalf("Wait before any run = %v, want nil at once", err)
		}
		watch(t, t.Context(), h, "a").End() // stops the run; its feed lingers
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if err := h.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Wait while the stopped run's feed has not returned = %v, want the deadline", err)
		}
		close(release)
		if err := h.Wait(t.Context()); err != nil {
			t.Fatalf("Wait once the feed returned = %v", err)
		}
		watch(t, t.Context(), h, "b").End() // a new run, which returns at once
		if err := h.Wait(t.Context()); err != nil {
			t.Fatalf("Wait after a second run = %v", err)
		}
	})
}
