package nats

import (
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hustings/hustings/backends/internal/record"
	"github.com/hustings/hustings/backends/nats/natstest"
)

func testBucket(t *testing.T) *bucket {
	t.Helper()
	srv := natstest.Start(t)
	js, err := jetstream.New(natstest.Conn(t, srv.URL()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateKeyValue(t.Context(), jetstream.KeyValueConfig{Bucket: "b", LimitMarkerTTL: time.Second}); err != nil {
		t.Fatal(err)
	}
	return newBucket(js, "b")
}

func TestBucketWriteGetRemove(t *testing.T) {
	b := testBucket(t)
	ctx := t.Context()
	if e, err := b.get(ctx, "k"); err != nil || e.rev != 0 || e.live {
		t.Fatalf("get of a key never written = %+v, %v; want no message", e, err)
	}
	r1, err := b.write(ctx, "k", []byte("a"), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.write(ctx, "k", []byte("b"), 0, 0); !errors.Is(err, record.ErrConflict) {
		t.Fatalf("write on revision 0 of a live key: %v, want record.ErrConflict", err)
	}
	if _, err := b.write(ctx, "k", []byte("b"), r1+1, 0); !errors.Is(err, record.ErrConflict) {
		t.Fatalf("write on a wrong revision: %v, want record.ErrConflict", err)
	}
	r2, err := b.write(ctx, "k", []byte("b"), r1, time.Hour)
	if err != nil || r2 <= r1 {
		t.Fatalf("write = %d, %v; want > %d", r2, err, r1)
	}
	if e, err := b.get(ctx, "k"); err != nil || e.rev != r2 || !e.live || string(e.value) != "b" {
		t.Fatalf("get = %+v, %v; want b live at %d", e, err, r2)
	}
	if e, err := b.getLeader(ctx, "k"); err != nil || e.rev != r2 || !e.live || string(e.value) != "b" {
		t.Fatalf("getLeader = %+v, %v; want b live at %d", e, err, r2)
	}
	if e, err := b.getLeader(ctx, "never"); err != nil || e.rev != 0 || e.live {
		t.Fatalf("getLeader of a key never written = %+v, %v; want no message", e, err)
	}
	if err := b.remove(ctx, "k", r1); !errors.Is(err, record.ErrConflict) {
		t.Fatalf("remove on a stale revision: %v, want record.ErrConflict", err)
	}
	if err := b.remove(ctx, "k", r2); err != nil {
		t.Fatal(err)
	}
	e, err := b.get(ctx, "k")
	if err != nil || e.live || e.rev <= r2 {
		t.Fatalf("get after remove = %+v, %v; want a marker after %d", e, err, r2)
	}
	if l, err := b.getLeader(ctx, "k"); err != nil || l.live || l.rev != e.rev {
		t.Fatalf("getLeader after remove = %+v, %v; want the marker at %d", l, err, e.rev)
	}
	if _, err := b.write(ctx, "k", []byte("c"), 0, 0); !errors.Is(err, record.ErrConflict) {
		t.Fatalf("write on revision 0 over a marker: %v, want record.ErrConflict", err)
	}
	r3, err := b.write(ctx, "k", []byte("c"), e.rev, 0)
	if err != nil || r3 <= e.rev {
		t.Fatalf("create over the marker = %d, %v; want > %d", r3, err, e.rev)
	}
}

// TestDriverTakesRacingRemovals is nats-server #5162 at the driver:
// takers of one lock record (a read, then a create where no message is or
// a write on the revision of the marker read) and removers, at once;
// every take is a record or record.ErrConflict, never another error, and
// the takes that won never overlap.
func TestDriverTakesRacingRemovals(t *testing.T) {
	d := testBucket(t)
	ctx := t.Context()
	take := func() (record.Lock, error) {
		v, err := d.ReadLock(ctx, "k", "")
		switch {
		case err != nil:
			return record.Lock{}, err
		case v.Lock.Session != "":
			return record.Lock{}, record.ErrConflict
		case v.Lock.Version == 0:
			return d.CreateLock(ctx, record.Lock{Name: "k", Session: "s", Candidate: "c"})
		}
		return d.SwapLock(ctx, record.Lock{Name: "k", Session: "s", Candidate: "c"}, v.Lock.Version)
	}
	var holders, won atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			for range 40 {
				l, err := take()
				if errors.Is(err, record.ErrConflict) {
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				won.Add(1)
				if holders.Add(1) != 1 {
					errs <- errors.New("two takers hold the lock at once")
				}
				holders.Add(-1)
				if err := d.DeleteLock(ctx, "k", l.Version); err != nil {
					errs <- fmt.Errorf("removal of the lock taken: %w", err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if won.Load() == 0 {
		t.Fatal("no take won")
	}
}

func TestBucketGetMany(t *testing.T) {
	b := testBucket(t)
	ctx := t.Context()
	const n = 2*maxMulti + 10
	keys := make([]string, n+1)
	want := map[string]uint64{}
	for i := range n {
		keys[i] = fmt.Sprintf("k%d", i)
		rev, err := b.write(ctx, keys[i], []byte("v"), 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		want[keys[i]] = rev
	}
	keys[n] = "never-written"
	if err := b.remove(ctx, "k7", want["k7"]); err != nil {
		t.Fatal(err)
	}
	got, err := b.getMany(ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Fatalf("getMany: %d keys, want %d", len(got), n)
	}
	for k, rev := range want {
		e := got[k]
		if k == "k7" {
			if e.live || e.rev <= rev {
				t.Fatalf("k7 = %+v, want its marker", e)
			}
			continue
		}
		if !e.live || e.rev != rev {
			t.Fatalf("%s = %+v, want live at %d", k, e, rev)
		}
	}
	if got, err := b.getMany(ctx, []string{"never-written"}); err != nil || len(got) != 0 {
		t.Fatalf("getMany of a key never written = %v, %v", got, err)
	}
}

// TestScanLeader: the leader's listing of a pattern is the replicas'.
func TestScanLeader(t *testing.T) {
	b, ctx := testBucket(t), t.Context()
	for _, k := range []string{"a.x", "a.y", "a.z", "b.x"} {
		if _, err := b.write(ctx, k, []byte(k), 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.remove(ctx, "a.y", 0); err != nil {
		t.Fatal(err)
	}
	for _, pattern := range []string{"a.*", "*.x", ">", "c.*"} {
		want, err := b.getMany(ctx, []string{pattern})
		if err != nil {
			t.Fatal(err)
		}
		got, err := b.scanLeader(ctx, pattern)
		if err != nil {
			t.Fatal(err)
		}
		if !maps.EqualFunc(got, want, func(x, y entry) bool { return x.rev == y.rev && x.live == y.live && string(x.value) == string(y.value) }) {
			t.Errorf("scanLeader(%q) = %v, the replicas' %v", pattern, got, want)
		}
	}
}

func TestSeconds(t *testing.T) {
	for _, c := range []struct{ in, want time.Duration }{
		{time.Millisecond, time.Second}, {time.Second, time.Second},
		{1500 * time.Millisecond, 2 * time.Second}, {3 * time.Second, 3 * time.Second},
	} {
		if got := seconds(c.in); got != c.want {
			t.Errorf("seconds(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

// TestFeed: the feed delivers every write after it started, in order,
// markers included (a removal, an expiry), and goes on across a crash and
// restart of the server.
func TestFeed(t *testing.T) {
	srv := natstest.Start(t)
	js, err := jetstream.New(natstest.Conn(t, srv.URL()))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "b", LimitMarkerTTL: time.Second}); err != nil {
		t.Fatal(err)
	}
	b := newBucket(js, "b")
	type change struct {
		key string
		entry
	}
	changes := make(chan change, 100)
	f, err := b.watchAll(ctx, func(key string, e entry) { changes <- change{key, e} })
	if err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	want := func(key string, rev uint64, live bool) {
		t.Helper()
		select {
		case c := <-changes:
			if c.key != key || (rev != 0 && c.rev != rev) || c.live != live {
				t.Fatalf("next = %+v, want %s at %d live %v", c, key, rev, live)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("no change within 30s, want %s at %d", key, rev)
		}
	}
	r1, err := b.write(ctx, "a", []byte("x"), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	want("a", r1, true)
	if err := b.remove(ctx, "a", r1); err != nil {
		t.Fatal(err)
	}
	want("a", r1+1, false)
	r3, err := b.write(ctx, "t", []byte("x"), 0, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want("t", r3, true)
	want("t", 0, false) // its expiry
	srv.Kill()
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	t.Logf("restarted")
	var r4 uint64
	for r4 == 0 {
		if r4, err = b.write(ctx, "after", []byte("x"), 0, 0); err != nil {
			if ctx.Err() != nil {
				t.Fatal(err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	start := time.Now()
	want("after", r4, true)
	t.Logf("the write after the restart delivered %v after it was acknowledged", time.Since(start))
	f.Stop()
	select {
	case <-f.Closed():
	case <-time.After(30 * time.Second):
		t.Fatal("Closed open 30s after Stop")
	}
}

func TestKeyOf(t *testing.T) {
	for in, want := range map[string]string{
		"plain-name_1": "plain-name_1",
		"a.b c/d=":     "a=2Eb=20c=2Fd=3D",
		"é":            "=C3=A9",
	} {
		if got := keyOf(in); got != want {
			t.Errorf("keyOf(%q) = %q, want %q", in, got, want)
		}
		if back, ok := unkey(want); !ok || back != in {
			t.Errorf("unkey(%q) = %q, %v; want %q", want, back, ok, in)
		}
	}
	for _, bad := range []string{"=", "=4", "=ZZ"} {
		if _, ok := unkey(bad); ok {
			t.Errorf("unkey(%q) ok, want refused", bad)
		}
	}
}

// TestReadsOwnWritesOnReplicas: on a bucket of three replicas, a bucket
// on a connection to each node reads what it just wrote, removed or read,
// whichever replica answers: a value written, an entry removed, a key
// found by a wildcard. A replica answers direct gets before it applied
// every write acknowledged to the client (nats-server #7285 removed the
// read-after-write check from 2.12), so a read that is not checked
// against the client's last sequence sees the value before.
func TestReadsOwnWritesOnReplicas(t *testing.T) {
	c := natstest.StartCluster(t, 3)
	var bs []*bucket
	for i, s := range c.Servers {
		js, err := jetstream.New(natstest.Conn(t, s.URL()))
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if _, err := js.CreateKeyValue(t.Context(), jetstream.KeyValueConfig{Bucket: "b", Replicas: 3, LimitMarkerTTL: time.Second}); err != nil {
				t.Fatal(err)
			}
		}
		bs = append(bs, newBucket(js, "b"))
	}
	ctx := t.Context()
	var wg sync.WaitGroup
	errs := make(chan error, len(bs))
	for i, b := range bs {
		wg.Go(func() {
			var rev uint64
			for n := range 300 {
				key := fmt.Sprintf("g%d.k%d", i, n%2)
				value := fmt.Sprint(n)
				e, err := b.getLeader(ctx, key) // the marker of the last round's removal
				r := uint64(0)
				if err == nil {
					r, err = b.write(ctx, key, []byte(value), e.rev, 0)
				}
				if err != nil {
					errs <- fmt.Errorf("write %s: %w", key, err)
					return
				}
				rev = r
				got, err := b.scan(ctx, fmt.Sprintf("g%d.*", i))
				if e := got[key]; err != nil || !e.live || e.rev != rev || string(e.value) != value {
					errs <- fmt.Errorf("round %d: after writing %s = %s at %d, the wildcard read %+v (%v)", n, key, value, rev, e, err)
					return
				}
				if err := b.remove(ctx, key, rev); err != nil {
					errs <- fmt.Errorf("remove %s: %w", key, err)
					return
				}
				got, err = b.getMany(ctx, []string{key})
				if e := got[key]; err != nil || e.live {
					errs <- fmt.Errorf("round %d: after removing %s, the read %+v (%v)", n, key, e, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
