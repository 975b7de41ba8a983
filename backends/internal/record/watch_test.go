package record_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/internal/record"
)

// stuckFeed is a mapDriver with a feed that pushes nothing and, once
// stopped, returns only when let go (as a client reconnecting does), and
// whose ReadLock fails once failing is set.
type stuckFeed struct {
	*mapDriver
	failing  atomic.Bool
	letGo    chan struct{}
	returned atomic.Bool
}

func (d *stuckFeed) Notify(ctx context.Context, f *record.Feed) error {
	f.Ready()
	<-ctx.Done()
	<-d.letGo
	d.returned.Store(true)
	return nil
}

func (d *stuckFeed) ReadLock(ctx context.Context, name, self string) (record.View, error) {
	if d.failing.Load() {
		return record.View{}, errors.New("link cut")
	}
	return d.mapDriver.ReadLock(ctx, name, self)
}

// TestFailedReadClosesWatchesWhileTheFeedStops: a read of a watched lock
// due at its holder's expiry that fails ends every watch at once, while
// the driver's feed is still stopping.
func TestFailedReadClosesWatchesWhileTheFeedStops(t *testing.T) {
	d := &stuckFeed{mapDriver: newMapDriver(), letGo: make(chan struct{})}
	defer close(d.letGo)
	s, err := record.New(d, record.Config{Name: "stuck"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	a, err := s.Open(ctx, "a", 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Acquire(ctx, "x", 0); err != nil {
		t.Fatal(err)
	}
	ch, err := s.Watch(ctx, "x") // read: due again at a's expiry
	if err != nil {
		t.Fatal(err)
	}
	d.failing.Store(true)
	timeout := time.After(10 * time.Second)
	for open := true; open; {
		select {
		case _, open = <-ch:
		case <-timeout:
			t.Fatal("the watch was not closed within 10s of a failed read")
		}
	}
	if d.returned.Load() {
		t.Fatal("the feed returned before it was let go")
	}
	if err := a.Close(ctx); err != nil && !errors.Is(err, backends.ErrSessionLost) {
		t.Fatal(err)
	}
}

// TestWatchPollsOthersWrites: on a store with no feed, a watch is
// signalled of a write by another process's Store (no write through its
// own) by its polls.
func TestWatchPollsOthersWrites(t *testing.T) {
	d := newMapDriver()
	var stores [2]*record.Store
	for i := range stores {
		s, err := record.New(d, record.Config{Name: "map", Poll: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		stores[i] = s
	}
	ctx := t.Context()
	ch, err := stores[0].Watch(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	b, err := stores[1].Open(ctx, "b", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(ctx)
	if _, err := b.Acquire(ctx, "x", 0); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("no signal within 10s of another Store's take")
	}
}
