package chaos

import (
	"context"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/hustings/hustings/backends/mongodb"
	"github.com/hustings/hustings/backends/mongodb/mongotest"
	"github.com/hustings/hustings/events"
)

// startMongoDB runs a FerretDB server over SQLite of its own (package
// mongotest), a stand-in for MongoDB: down is a crash (SIGKILL), up a
// restart on the same files. tamper deletes the lock's documents but its
// root, as the mongodb package doc tells an operator to.
func startMongoDB(t *testing.T) server {
	s := mongotest.Start(t)
	locks := mongotest.Client(t, s.URI()).Database(mongotest.Database).Collection(mongodb.DefaultPrefix + "locks")
	return server{
		addr: s.Addr(),
		url:  mongotest.URI,
		down: s.Kill,
		up:   s.Restart,
		tamper: func(ctx context.Context, name string, token events.Token) error {
			// Only while the highest state is the term of token, and only
			// the states up to it: a state written since (a release, the
			// next take) is the lock's and stays.
			states := bson.D{{Key: "name", Value: name}, {Key: "root", Value: bson.D{{Key: "$ne", Value: true}}}}
			var top struct {
				Ver int64  `bson:"ver"`
				Sid string `bson:"sid"`
				Tok int64  `bson:"tok"`
			}
			err := locks.FindOne(ctx, states, options.FindOne().SetSort(bson.D{{Key: "ver", Value: -1}})).Decode(&top)
			if err != nil {
				return fmt.Errorf("read lock %q: %w", name, err)
			}
			if top.Sid == "" || top.Tok != int64(token) {
				return fmt.Errorf("lock %q is not under token %d (its state: %+v)", name, token, top)
			}
			res, err := locks.DeleteMany(ctx, append(states, bson.E{Key: "ver", Value: bson.D{{Key: "$lte", Value: top.Ver}}}))
			if err == nil && res.DeletedCount == 0 {
				err = fmt.Errorf("no lock document %q to delete", name)
			}
			return err
		},
	}
}
