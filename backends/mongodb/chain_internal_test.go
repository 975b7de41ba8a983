package mongodb

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/hustings/hustings/backends/internal/record"
	"github.com/hustings/hustings/backends/mongodb/mongotest"
)

// TestChainIsAtomic holds the step every lock write rests on to the
// server (FerretDB, whose updates are not atomic): eight clients, each
// reading the lock's state and writing the next over it, as fast as they
// can; no version is won twice, and the chain's state is the last win.
func TestChainIsAtomic(t *testing.T) {
	srv := mongotest.Start(t)
	const clients, tries = 8, 30
	var (
		mu   sync.Mutex
		wins = map[uint64]string{}
		last uint64
		wg   sync.WaitGroup
	)
	for i := range clients {
		d := newDriver(mongotest.Client(t, srv.URI()), mongotest.Database, "race_")
		who := fmt.Sprint("s", i)
		wg.Go(func() {
			for range tries {
				v, err := d.ReadLock(t.Context(), "x", "")
				if err != nil {
					t.Error(err)
					return
				}
				l := record.Lock{Name: "x", Session: who, Candidate: who}
				var got record.Lock
				if v.Lock.Version == 0 {
					got, err = d.CreateLock(t.Context(), l)
				} else {
					got, err = d.SwapLock(t.Context(), l, v.Lock.Version)
				}
				if errors.Is(err, record.ErrConflict) {
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if other, ok := wins[got.Version]; ok {
					t.Errorf("version %d won by %s and by %s", got.Version, other, who)
				}
				wins[got.Version] = who
				last = max(last, got.Version)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(wins) < clients {
		t.Fatalf("%d wins of %d clients: they did not race", len(wins), clients)
	}
	d := newDriver(mongotest.Client(t, srv.URI()), mongotest.Database, "race_")
	v, err := d.ReadLock(t.Context(), "x", "")
	if err != nil || v.Lock.Version != last || v.Lock.Session != wins[last] {
		t.Fatalf("state after the race: %+v, %v; want version %d of %s", v.Lock, err, last, wins[last])
	}
	t.Logf("%d versions won, none twice", len(wins))
}

// TestStaleWriterLoses: a writer that read the state two writes ago,
// whose insert meets a key the chain freed, loses, and leaves nothing.
func TestStaleWriterLoses(t *testing.T) {
	srv := mongotest.Start(t)
	d := newDriver(mongotest.Client(t, srv.URI()), mongotest.Database, "stale_")
	ctx := t.Context()
	take := func(from uint64, who string) (record.Lock, error) {
		l := record.Lock{Name: "y", Session: who, Candidate: who, Expires: time.Now().Add(time.Hour)}
		if from == 0 {
			return d.CreateLock(ctx, l)
		}
		return d.SwapLock(ctx, l, from)
	}
	first, err := take(0, "a")
	if err != nil {
		t.Fatal(err)
	}
	second, err := take(first.Version, "b")
	if err != nil {
		t.Fatal(err)
	}
	third, err := take(second.Version, "c")
	if err != nil {
		t.Fatal(err)
	}
	// A writer that read first: second's key is free again.
	if _, err := take(first.Version, "stale"); !errors.Is(err, record.ErrConflict) {
		t.Fatalf("a write over a state two writes old: %v, want ErrConflict", err)
	}
	n, err := d.locks.CountDocuments(ctx, bson.D{{Key: "name", Value: "y"}})
	if err != nil || n != 2 { // the root and the state
		t.Fatalf("documents of the lock: %d, %v; want 2 (no stray left)", n, err)
	}
	v, err := d.ReadLock(ctx, "y", "")
	if err != nil || v.Lock.Version != third.Version || v.Lock.Session != "c" {
		t.Fatalf("state: %+v, %v; want c's at version %d", v.Lock, err, third.Version)
	}
	// An operator deletes the states; the next take is in a new epoch,
	// above every version before, and a stale writer is below it.
	if _, err := d.locks.DeleteMany(ctx, bson.D{{Key: "name", Value: "y"}, {Key: "root", Value: bson.D{{Key: "$ne", Value: true}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := take(0, "d"); !errors.Is(err, record.ErrConflict) {
		t.Fatalf("a take after the delete: %v, want ErrConflict (the root moved on; read again)", err)
	}
	v, err = d.ReadLock(ctx, "y", "")
	if err != nil || v.Lock.Version <= third.Version || v.Lock.Session != "" {
		t.Fatalf("state after the delete: %+v, %v; want a free state above %d", v.Lock, err, third.Version)
	}
	fourth, err := take(v.Lock.Version, "d")
	if err != nil || fourth.Token <= third.Token {
		t.Fatalf("take after the delete: %+v, %v; want a token above %d", fourth, err, third.Token)
	}
	if _, err := take(third.Version, "stale"); !errors.Is(err, record.ErrConflict) {
		t.Fatalf("a write over the deleted state: %v, want ErrConflict", err)
	}
}

// TestReadAfterAnotherWriter: a driver whose remembered version is one
// write behind (the state after it is there) or two (both gone) reads the
// lock's current state, by _id in the first case and by name in the
// second.
func TestReadAfterAnotherWriter(t *testing.T) {
	srv := mongotest.Start(t)
	ctx := t.Context()
	a := newDriver(mongotest.Client(t, srv.URI()), mongotest.Database, "seen_")
	b := newDriver(mongotest.Client(t, srv.URI()), mongotest.Database, "seen_")
	l := record.Lock{Name: "z", Session: "a", Candidate: "a", Expires: time.Now().Add(time.Hour)}
	cur, err := a.CreateLock(ctx, l)
	if err != nil {
		t.Fatal(err)
	}
	for behind := 1; behind <= 2; behind++ {
		for range behind {
			l.Session, l.Candidate = fmt.Sprint("b", behind), fmt.Sprint("b", behind)
			if cur, err = b.SwapLock(ctx, l, cur.Version); err != nil {
				t.Fatal(err)
			}
		}
		v, err := a.ReadLock(ctx, "z", "")
		if err != nil || v.Lock.Version != cur.Version || v.Lock.Session != cur.Session {
			t.Fatalf("%d writes behind: read %+v, %v; want %s's state at %d", behind, v.Lock, err, cur.Session, cur.Version)
		}
	}
}
