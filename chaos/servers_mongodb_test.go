package chaos

import (
	"context"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

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
		tamper: func(ctx context.Context, name string, _ events.Token) error {
			res, err := locks.DeleteMany(ctx, bson.D{{Key: "name", Value: name}, {Key: "root", Value: bson.D{{Key: "$ne", Value: true}}}})
			if err != nil {
				return err
			}
			if res.DeletedCount == 0 {
				return fmt.Errorf("no lock document %q to delete", name)
			}
			return nil
		},
	}
}
