package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/mongodb"
	"github.com/hustings/hustings/backends/mongodb/mongotest"
)

// startMongoDB starts a FerretDB server over SQLite (package mongotest:
// its files in a temporary directory), a stand-in for MongoDB, with the
// backend's indexes.
func startMongoDB() (*system, error) {
	srv, err := mongotest.StartServer()
	if err != nil {
		return nil, err
	}
	s := &system{name: "mongodb", maxTTL: 30 * time.Second, poll: defaultPoll, closers: []func(){srv.Stop}}
	c, err := mongotest.Connect(srv.URI())
	if err != nil {
		return s, err
	}
	s.closers = append(s.closers, func() { _ = c.Disconnect(context.Background()) })
	ctx := context.Background()
	if err := mongodb.EnsureIndexes(ctx, c, mongotest.Database); err != nil {
		return s, err
	}
	if s.backend, err = mongodb.New(c, mongotest.Database); err != nil {
		return s, err
	}
	s.fresh = func() (backends.Backend, func(), error) {
		c, err := mongotest.Connect(srv.URI())
		if err != nil {
			return nil, nil, err
		}
		b, err := mongodb.New(c, mongotest.Database)
		if err != nil {
			_ = c.Disconnect(context.Background())
			return nil, nil, err
		}
		return b, func() { _ = c.Disconnect(context.Background()) }, nil
	}
	db := c.Database(mongotest.Database)
	s.fence = mongoFence(s.backend.(*mongodb.Backend), db)
	s.readName, s.read = "find by _id", func(ctx context.Context) error {
		err := db.Collection("bench_read").FindOne(ctx, bson.D{{Key: "_id", Value: "r"}}).Err()
		if errors.Is(err, mongo.ErrNoDocuments) {
			err = nil
		}
		return err
	}
	s.writeName, s.write = "insertOne", func(ctx context.Context) error {
		_, err := db.Collection("bench_write").InsertOne(ctx, bson.D{{Key: "_id", Value: fmt.Sprintf("w%d", seq.Add(1))}})
		return err
	}
	s.peers = mongoPeers(srv.URI())
	return s, nil
}
