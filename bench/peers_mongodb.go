package main

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/hustings/hustings/backends/mongodb/mongotest"
)

// mongoPeerPoll is how often a waiting baseline candidate tries again.
const mongoPeerPoll = 100 * time.Millisecond

// mongoPeers is the lock a MongoDB user writes by hand, no library being
// served by the module proxy (github.com/square/mongo-lock answers 403
// Forbidden there; it is on mongo-driver v1 besides): an insert of a
// document whose _id is the lock's name (a duplicate key: held; try
// again every mongoPeerPoll), the section, then a delete of it.
func mongoPeers(uri string) []peer {
	return []peer{{
		name: "unique insert + delete",
		note: "InsertOne({_id: name}) until it is not a duplicate key (polling every 100ms), DeleteOne at the end (square/mongo-lock's way; the module is not served by the proxy); no expiry (a crashed holder's document stays), no fencing token",
		gap:  mongoPeerPoll,
		open: func(ctx context.Context) (locker, error) {
			c, err := mongotest.Connect(uri)
			if err != nil {
				return nil, err
			}
			return insertLocker{c: c, coll: c.Database(mongotest.Database).Collection("bench_peer")}, nil
		},
	}}
}

type insertLocker struct {
	c    *mongo.Client
	coll *mongo.Collection
}

func (l insertLocker) run(ctx context.Context, name string, cs func()) error {
	for {
		_, err := l.coll.InsertOne(ctx, bson.D{{Key: "_id", Value: name}})
		if err == nil {
			break
		}
		if !mongo.IsDuplicateKeyError(err) {
			return err
		}
		select {
		case <-time.After(mongoPeerPoll):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	cs()
	_, err := l.coll.DeleteOne(context.WithoutCancel(ctx), bson.D{{Key: "_id", Value: name}})
	return err
}

func (l insertLocker) close() { _ = l.c.Disconnect(context.Background()) }
