package mongodb_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.uber.org/goleak"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/backendtest"
	"github.com/hustings/hustings/backends/mongodb"
	"github.com/hustings/hustings/backends/mongodb/mongotest"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/faultlink"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, faultlink.KnownLeaks()...)
}

var prefixes atomic.Int64

// newBackend returns a Backend on a client of uri, in collections of a
// prefix of its own (indexes made), polling fast; the client is
// disconnected when the test ends.
func newBackend(t testing.TB, uri string) *mongodb.Backend {
	t.Helper()
	return newBackendPrefix(t, uri, fmt.Sprintf("t%d_", prefixes.Add(1)))
}

func newBackendPrefix(t testing.TB, uri, prefix string) *mongodb.Backend {
	t.Helper()
	c := mongotest.Client(t, uri)
	if err := mongodb.EnsureIndexes(t.Context(), c, mongotest.Database, mongodb.WithPrefix(prefix)); err != nil {
		t.Fatalf("EnsureIndexes: %v", err)
	}
	b, err := mongodb.New(c, mongotest.Database, mongodb.WithPrefix(prefix), mongodb.WithPoll(50*time.Millisecond))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return b
}

// fenced is the collection the contract's fenced writes go to.
func fenced(c *mongo.Client) *mongo.Collection {
	return c.Database(mongotest.Database).Collection("fenced")
}

// fencedWrite counts one write of document name in fenced under the
// fence of name and token.
func fencedWrite(ctx context.Context, c *mongo.Client, b *mongodb.Backend, name string, token events.Token) error {
	_, err := b.FencedUpdate(ctx, fenced(c), name, token,
		bson.D{{Key: "_id", Value: name}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}},
		options.UpdateOne().SetUpsert(true))
	return err
}

// deleteLock deletes the documents of lock name but its root, as the
// package doc tells an operator to.
func deleteLock(t *testing.T, b backends.Backend, name string) {
	t.Helper()
	res, err := b.(*mongodb.Backend).Locks().DeleteMany(t.Context(),
		bson.D{{Key: "name", Value: name}, {Key: "root", Value: bson.D{{Key: "$ne", Value: true}}}})
	if err != nil || res.DeletedCount == 0 {
		t.Fatalf("deleting lock %q: %v, %+v; want its documents deleted", name, err, res)
	}
}

func TestContract(t *testing.T) {
	srv := mongotest.Start(t)
	c := mongotest.Client(t, srv.URI())
	backendtest.Run(t, backendtest.Harness{
		New: func(t *testing.T) backends.Backend { return newBackend(t, srv.URI()) },
		// Some checks (TokensIncrease: a dozen writes) use a session
		// without renewing it, and FerretDB's writes wait on SQLite's
		// one lock: beside two CPU burners, RaceForFreeLock's rounds
		// outlasted a TTL of 1 s before it renewed between them.
		TTL:    2 * time.Second,
		Delete: deleteLock,
		Fence: func(ctx context.Context, b backends.Backend, name string, token events.Token) error {
			return fencedWrite(ctx, c, b.(*mongodb.Backend), name, token)
		},
	})
}

// TestGroups runs the group scenario of the contract suite (crashes and
// resignations among 8 candidates for 3 slots) against a real server, in
// real time.
func TestGroups(t *testing.T) {
	srv := mongotest.Start(t)
	backendtest.RunGroups(t, backendtest.Harness{
		New: func(t *testing.T) backends.Backend { return newBackend(t, srv.URI()) },
		TTL: time.Second,
	})
}

func TestStorm(t *testing.T) {
	srv := mongotest.Start(t)
	prefix := fmt.Sprintf("storm%d_", prefixes.Add(1)) // one store for the whole storm
	backendtest.RunStorm(t, backendtest.Harness{
		New: func(t *testing.T) backends.Backend { return newBackendPrefix(t, srv.URI(), prefix) },
		TTL: 3 * time.Second,
	}, stormN)
}

// TestFencedUpdate: a write under an older token than the last that
// wrote the document matches nothing, with or without upsert, even while
// the older term's lock check passes (the check and the write are two
// steps; the document's token is the guard between them).
func TestFencedUpdate(t *testing.T) {
	srv := mongotest.Start(t)
	b := newBackend(t, srv.URI())
	c := mongotest.Client(t, srv.URI())
	coll := c.Database(mongotest.Database).Collection("guarded")
	ctx := t.Context()
	a := backendtest.Open(t, b, "a", 3*time.Second)
	tok := backendtest.Acquire(t, a, "job")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "doc"}, {Key: mongodb.FenceField, Value: int64(tok) + 1}}); err != nil {
		t.Fatal(err)
	}
	for _, upsert := range []bool{false, true} {
		_, err := b.FencedUpdate(ctx, coll, "job", tok, bson.D{{Key: "_id", Value: "doc"}},
			bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}}, options.UpdateOne().SetUpsert(upsert))
		if !errors.Is(err, backends.ErrNotHeld) {
			t.Fatalf("upsert %v: a write under token %d over a document of token %d: %v, want ErrNotHeld", upsert, tok, tok+1, err)
		}
	}
	res, err := b.FencedUpdate(ctx, coll, "job", tok, bson.D{{Key: "_id", Value: "other"}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}, {Key: "$max", Value: bson.D{{Key: "y", Value: 2}}}},
		options.UpdateOne().SetUpsert(true))
	if err != nil || res.UpsertedCount != 1 {
		t.Fatalf("a write of a new document under the holder's token: %+v, %v", res, err)
	}
	var got bson.M
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: "other"}}).Decode(&got); err != nil ||
		got[mongodb.FenceField] != int64(tok) || got["y"] != int32(2) && got["y"] != int64(2) {
		t.Fatalf("the document written: %v, %v; want its fence at %d and y 2", got, err, tok)
	}
	if err := b.Fence(ctx, "job", tok+1); !errors.Is(err, backends.ErrNotHeld) {
		t.Fatalf("Fence under a token not granted: %v, want ErrNotHeld", err)
	}
	if _, err := b.FencedUpdate(ctx, nil, "job", tok, nil, nil); !errors.Is(err, backends.ErrInvalid) {
		t.Fatalf("FencedUpdate on a nil collection: %v, want ErrInvalid", err)
	}
}

// TestClosedClient: see backendtest.ClosedClient.
func TestClosedClient(t *testing.T) {
	c, err := mongotest.Connect(mongotest.URI("127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Disconnect(t.Context()); err != nil {
		t.Fatal(err)
	}
	b, err := mongodb.New(c, "x")
	if err != nil {
		t.Fatal(err)
	}
	backendtest.ClosedClient(t, b)
}

func TestNewRejectsBadInput(t *testing.T) {
	c, err := mongotest.Connect(mongotest.URI("127.0.0.1:1")) // never dialled
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Disconnect(context.Background()) }()
	var typedNil *mongo.Client
	tests := []struct {
		name string
		c    *mongo.Client
		db   string
		opts []mongodb.Option
	}{
		{"nil client", nil, "db", nil},
		{"typed nil client", typedNil, "db", nil},
		{"no database", c, "", nil},
		{"database with a dot", c, "a.b", nil},
		{"long database", c, strings.Repeat("d", 64), nil},
		{"empty prefix", c, "db", []mongodb.Option{mongodb.WithPrefix("")}},
		{"dotted prefix", c, "db", []mongodb.Option{mongodb.WithPrefix("a.b")}},
		{"long prefix", c, "db", []mongodb.Option{mongodb.WithPrefix(strings.Repeat("p", 41))}},
		{"poll below 1ms", c, "db", []mongodb.Option{mongodb.WithPoll(time.Microsecond)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if b, err := mongodb.New(tt.c, tt.db, tt.opts...); !errors.Is(err, backends.ErrInvalid) || b != nil {
				t.Fatalf("New = %v, %v; want ErrInvalid", b, err)
			}
			if err := mongodb.EnsureIndexes(t.Context(), tt.c, tt.db, tt.opts...); !errors.Is(err, backends.ErrInvalid) {
				t.Fatalf("EnsureIndexes = %v; want ErrInvalid", err)
			}
		})
	}
}

// stormN is how many campaigns storm: 500, as mysql's. FerretDB over
// SQLite writes one document at a time (a few ms each, behind a busy
// wait) and reads every document of the collection for each query but by
// _id: while the reads of a take went by name, 500 first takes never
// settled (the start-up outlasted the session's TTL) and 200 collapsed
// beside two CPU burners. Since a take of a new lock reads and writes by
// _id alone (see ReadLock), 1,000 are elected in about 10 s beside two
// burners here.
const stormN = 500
