package mongodb

import (
	"context"
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
				got, err := writeOver(t.Context(), d, v, l)
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

// TestStaleWriterLoses: a writer that read the state three writes ago,
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
	fourth, err := take(third.Version, "c")
	if err != nil {
		t.Fatal(err)
	}
	// A writer that read first: second's key is free again.
	if _, err := take(first.Version, "stale"); !errors.Is(err, record.ErrConflict) {
		t.Fatalf("a write over a state three writes old: %v, want ErrConflict", err)
	}
	n, err := d.locks.CountDocuments(ctx, bson.D{{Key: "name", Value: "y"}})
	if err != nil || n != 3 { // the root and the last two states
		t.Fatalf("documents of the lock: %d, %v; want 3 (no stray left)", n, err)
	}
	v, err := d.ReadLock(ctx, "y", "")
	if err != nil || v.Lock.Version != fourth.Version || v.Lock.Session != "c" {
		t.Fatalf("state: %+v, %v; want c's at version %d", v.Lock, err, fourth.Version)
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
	if err != nil || v.Lock.Version <= fourth.Version || v.Lock.Session != "" {
		t.Fatalf("state after the delete: %+v, %v; want a free state above %d", v.Lock, err, fourth.Version)
	}
	fifth, err := take(v.Lock.Version, "d")
	if err != nil || fifth.Token <= fourth.Token {
		t.Fatalf("take after the delete: %+v, %v; want a token above %d", fifth, err, fourth.Token)
	}
	if _, err := take(fourth.Version, "stale"); !errors.Is(err, record.ErrConflict) {
		t.Fatalf("a write over the deleted state: %v, want ErrConflict", err)
	}
}

// TestReadAfterAnotherWriter: a driver whose remembered version is one
// or two writes behind (the state after it is there) or three (it and
// the one after are gone) reads the lock's current state, by _id in the
// first cases and by name in the last.
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
	for behind := 1; behind <= 3; behind++ {
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

// TestTakesAfterDelete races eight clients, each with a driver of its
// own, to take a lock whose states an operator has just deleted, round
// after round: each takes only a free lock, so that one at most wins a
// round, with a token above every token before it.
func TestTakesAfterDelete(t *testing.T) {
	srv := mongotest.Start(t)
	ctx := t.Context()
	const clients, rounds = 8, 40
	ds := make([]*driver, clients)
	for i := range ds {
		ds[i] = newDriver(mongotest.Client(t, srv.URI()), mongotest.Database, "tamper_")
	}
	var last record.Lock
	for round := range rounds {
		if round > 0 {
			if _, err := ds[0].locks.DeleteMany(ctx, bson.D{{Key: "name", Value: "t"}, {Key: "root", Value: bson.D{{Key: "$ne", Value: true}}}}); err != nil {
				t.Fatal(err)
			}
		}
		var (
			mu   sync.Mutex
			wins []record.Lock
			wg   sync.WaitGroup
		)
		for i, d := range ds {
			who := fmt.Sprint("r", round, "c", i)
			wg.Go(func() {
				for range 50 {
					v, err := d.ReadLock(ctx, "t", "")
					if err != nil {
						t.Error(err)
						return
					}
					if v.Lock.Session != "" {
						return // taken
					}
					l := record.Lock{Name: "t", Session: who, Candidate: who, Expires: time.Now().Add(time.Hour)}
					got, err := writeOver(ctx, d, v, l)
					if errors.Is(err, record.ErrConflict) {
						continue
					}
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					wins = append(wins, got)
					mu.Unlock()
					return
				}
			})
		}
		wg.Wait()
		if len(wins) != 1 {
			t.Fatalf("round %d: %d takes won, want 1: %+v", round, len(wins), wins)
		}
		if wins[0].Token <= last.Token {
			t.Fatalf("round %d: token %d after %d", round, wins[0].Token, last.Token)
		}
		last = wins[0]
		v, err := ds[0].ReadLock(ctx, "t", "")
		if err != nil || v.Lock.Session != last.Session || v.Lock.Token != last.Token {
			t.Fatalf("round %d: state %+v, %v; want the winner's %+v", round, v.Lock, err, last)
		}
	}
}

// TestRestartMark: a write meets a restart in progress and loses; the
// mark of a restarter that stopped before deleting it stands for
// restartStale, then the next restart deletes it and goes on.
func TestRestartMark(t *testing.T) {
	srv := mongotest.Start(t)
	ctx := t.Context()
	d := newDriver(mongotest.Client(t, srv.URI()), mongotest.Database, "mark_")
	l := record.Lock{Name: "m", Session: "a", Candidate: "a", Expires: time.Now().Add(time.Hour)}
	first, err := d.CreateLock(ctx, l)
	if err != nil {
		t.Fatal(err)
	}
	now, err := d.now(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.locks.InsertOne(ctx, restartDoc{ID: restartKey("m"), At: now, Nonce: "stopped"}); err != nil {
		t.Fatal(err)
	}
	l.Session, l.Candidate = "b", "b"
	if _, err := d.SwapLock(ctx, l, first.Version); !errors.Is(err, record.ErrConflict) {
		t.Fatalf("a write beside a restart's mark: %v, want ErrConflict", err)
	}
	if v, err := d.ReadLock(ctx, "m", ""); err != nil || v.Lock.Version != first.Version || v.Lock.Session != "a" {
		t.Fatalf("state after the write that lost: %+v, %v; want a's at %d", v.Lock, err, first.Version)
	}
	if _, err := d.locks.DeleteMany(ctx, bson.D{{Key: "name", Value: "m"}, {Key: "root", Value: bson.D{{Key: "$ne", Value: true}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.CreateLock(ctx, l); !errors.Is(err, record.ErrConflict) {
		t.Fatalf("a take beside a fresh mark: %v, want ErrConflict", err)
	}
	if v, err := d.ReadLock(ctx, "m", ""); err != nil || v.Lock.Version != 0 {
		t.Fatalf("state beside a fresh mark: %+v, %v; want none (no restart)", v.Lock, err)
	}
	if _, err := d.locks.UpdateOne(ctx, bson.D{{Key: "_id", Value: restartKey("m")}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "at", Value: now.Add(-restartStale - time.Second)}}}}); err != nil {
		t.Fatal(err)
	}
	var got record.Lock
	for try := 0; got.Version == 0; try++ {
		if try == 5 {
			t.Fatal("no take in 5 tries after the mark went stale")
		}
		v, err := d.ReadLock(ctx, "m", "")
		if err != nil {
			t.Fatal(err)
		}
		got, err = writeOver(ctx, d, v, l)
		if err != nil && !errors.Is(err, record.ErrConflict) {
			t.Fatal(err)
		}
	}
	if got.Token <= first.Token || got.Session != "b" {
		t.Fatalf("take after the stale mark: %+v; want b's, token above %d", got, first.Token)
	}
	if n, err := d.locks.CountDocuments(ctx, bson.D{{Key: "_id", Value: restartKey("m")}}); err != nil || n != 0 {
		t.Fatalf("marks left: %d, %v; want 0", n, err)
	}
}

// writeOver writes l over the state v read: the lock's first state if it
// has none.
func writeOver(ctx context.Context, d *driver, v record.View, l record.Lock) (record.Lock, error) {
	if v.Lock.Version == 0 {
		return d.CreateLock(ctx, l)
	}
	return d.SwapLock(ctx, l, v.Lock.Version)
}
