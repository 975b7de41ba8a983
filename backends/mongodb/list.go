package mongodb

import (
	"context"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/hustings/hustings/backends/internal/record"
)

var _ record.Lister = (*driver)(nil)

// ListLocks reads the names of the locks that start with prefix, held or
// not: one find of the chains' roots (every name ever taken has one, and
// keeps it), the names only.
func (d *driver) ListLocks(ctx context.Context, prefix string) ([]string, error) {
	if err := d.enter(ctx); err != nil {
		return nil, unavailable(ctx, "list", err)
	}
	defer d.leave()
	cur, err := d.locks.Find(ctx, bson.D{{Key: "root", Value: true}},
		options.Find().SetProjection(bson.D{{Key: "name", Value: 1}}))
	if err != nil {
		return nil, unavailable(ctx, "list", err)
	}
	var roots []lockDoc
	if err := cur.All(ctx, &roots); err != nil {
		return nil, unavailable(ctx, "list", err)
	}
	var names []string
	for _, r := range roots {
		if strings.HasPrefix(r.Name, prefix) {
			names = append(names, r.Name)
		}
	}
	return names, nil
}
