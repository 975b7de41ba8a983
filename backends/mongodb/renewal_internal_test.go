package mongodb

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/hustings/hustings/backends/internal/record"
	"github.com/hustings/hustings/backends/mongodb/mongotest"
)

// TestLateRenewalDoesNotRevive: a renewal the server applies after the
// session expired (a write that waited on the server long after its
// client gave up: FerretDB's SQLite queues writes behind a busy wait)
// leaves the session dead for every reader, even though no one is left
// to mark it so: the lock it held stays free. Seen in the chaos suite
// beside CPU burners: a lock held for seconds by a session its client
// had given up, with no campaign believing it led.
func TestLateRenewalDoesNotRevive(t *testing.T) {
	srv := mongotest.Start(t)
	d := newDriver(mongotest.Client(t, srv.URI()), mongotest.Database, "late_")
	ctx := t.Context()
	const ttl = 2 * time.Second
	s := record.Session{ID: "s-late", Candidate: "a", TTL: ttl}
	if _, err := d.CreateSession(ctx, s); err != nil {
		t.Fatal(err)
	}
	v, err := d.ReadLock(ctx, "x", s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := writeOver(ctx, d, v, record.Lock{Name: "x", Session: s.ID, Candidate: "a"}); err != nil {
		t.Fatal(err)
	}
	// The session's last renewal as its client knows it, set a TTL and a
	// second back (the server's clock has no fake): it expired a second
	// ago, and nothing renewed it since.
	last := time.Now().Add(-ttl - time.Second).UTC().Truncate(time.Millisecond)
	if _, err := d.sessions.UpdateOne(ctx, bson.D{{Key: "_id", Value: s.ID}}, bson.D{{Key: "$set", Value: bson.D{{Key: "at", Value: last}}}}); err != nil {
		t.Fatal(err)
	}
	// The renewal its client sent before that, applied only now; its
	// client gave up on it and marks nothing.
	if _, ok, err := d.renewAt(ctx, s.ID, last); err != nil || !ok {
		t.Fatalf("the late renewal did not apply: %v, %v", ok, err)
	}
	v, err = d.ReadLock(ctx, "x", "")
	if err != nil {
		t.Fatal(err)
	}
	if v.HolderAlive {
		t.Fatalf("the lock's session lives again after a renewal applied %v past its expiry: %+v", time.Second, v)
	}
	doc, alive, err := d.renew(ctx, record.Session{ID: s.ID, Candidate: "a", TTL: ttl, Version: uint64(last.UnixMilli())})
	if err != nil || alive {
		t.Fatalf("a renewal after the late one: alive %v, %v (%+v); want the session lost", alive, err, doc)
	}
}
