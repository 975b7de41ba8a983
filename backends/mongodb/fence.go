package mongodb

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/validate"
)

// FenceField is the field of the caller's documents in which
// FencedUpdate keeps the highest token that wrote each.
const FenceField = "_hustings_fence"

// FenceFilter is the condition FencedUpdate adds to the caller's filter:
// the document's FenceField is not above token (or is missing). Add it,
// and FenceUpdate, to an update of your own to fence it without
// FencedUpdate's check of the lock.
func FenceFilter(token events.Token) bson.E {
	return bson.E{Key: FenceField, Value: bson.D{{Key: "$not", Value: bson.D{{Key: "$gt", Value: int64(token)}}}}}
}

// FenceUpdate is the change FencedUpdate adds to the caller's update:
// FenceField raised to token ($max).
func FenceUpdate(token events.Token) bson.E {
	return bson.E{Key: "$max", Value: bson.D{{Key: FenceField, Value: int64(token)}}}
}

// Fence reports whether name is held under token now: nil if its state is
// a take under token whose session lives (and whose lease, if any, has
// not ended), else an error matching backends.ErrNotHeld (token 0, a
// released term, a hold, a term taken over). One read of the lock, its
// holder's session and the server's clock.
func (b *Backend) Fence(ctx context.Context, name string, token events.Token) error {
	if err := validate.Name(name); err != nil {
		return err
	}
	if token == 0 {
		return fmt.Errorf("%w: mongodb: %q under token 0", backends.ErrNotHeld, name)
	}
	if err := ctx.Err(); err != nil {
		return unavailable(ctx, "fence", err)
	}
	v, err := b.d.ReadLock(ctx, name, "")
	if err != nil {
		return err
	}
	l := v.Lock
	if l.Version == 0 || l.Hold || l.Token != token || !v.HolderAlive || !l.Expires.IsZero() && !l.Expires.After(v.Now) {
		return fmt.Errorf("%w: mongodb: %q is not held under token %d", backends.ErrNotHeld, name, token)
	}
	return nil
}

// FencedUpdate updates one document of coll (which may be in any
// database of the backend's client) under the fence of name and token:
// it checks the lock (Fence), then runs updateOne with filter and
// FenceFilter, and update with FenceUpdate, so that a write of an older
// token than the last that wrote the document matches nothing. update is
// a document of update operators; a $max of its own is kept beside
// FenceField's. A refusal matches backends.ErrNotHeld: the lock not held
// under token, or the document written under a later token (no match,
// or with opts' upsert a duplicate _id). A filter that matches no
// document otherwise is a result with MatchedCount 0, as updateOne's.
// On MongoDB the filter and the update are one atomic step; on FerretDB
// (see the package doc) they are not.
func (b *Backend) FencedUpdate(ctx context.Context, coll *mongo.Collection, name string, token events.Token,
	filter, update bson.D, opts ...options.Lister[options.UpdateOneOptions]) (*mongo.UpdateResult, error) {
	if coll == nil {
		return nil, fmt.Errorf("%w: mongodb: fence: nil collection", backends.ErrInvalid)
	}
	if err := b.Fence(ctx, name, token); err != nil {
		return nil, err
	}
	upd := make(bson.D, 0, len(update)+1)
	merged := false
	for _, e := range update {
		if e.Key == "$max" {
			m, ok := e.Value.(bson.D)
			if !ok {
				return nil, fmt.Errorf("%w: mongodb: fence: $max must be a bson.D", backends.ErrInvalid)
			}
			e.Value, merged = append(append(bson.D{}, m...), FenceUpdate(token).Value.(bson.D)...), true
		}
		upd = append(upd, e)
	}
	if !merged {
		upd = append(upd, FenceUpdate(token))
	}
	guarded := append(append(bson.D{}, filter...), FenceFilter(token))
	res, err := coll.UpdateOne(ctx, guarded, upd, opts...)
	if mongo.IsDuplicateKeyError(err) { // an upsert beside another: once more, over its document
		res, err = coll.UpdateOne(ctx, guarded, upd, opts...)
	}
	switch {
	case mongo.IsDuplicateKeyError(err):
		return nil, fmt.Errorf("%w: mongodb: fence: the document was written under a later token than %d", backends.ErrNotHeld, token)
	case err != nil:
		return nil, unavailable(ctx, "fence", err)
	case res.MatchedCount == 0 && res.UpsertedCount == 0:
		n, err := coll.CountDocuments(ctx, append(append(bson.D{}, filter...),
			bson.E{Key: FenceField, Value: bson.D{{Key: "$gt", Value: int64(token)}}}))
		if err != nil {
			return nil, unavailable(ctx, "fence", err)
		}
		if n > 0 {
			return nil, fmt.Errorf("%w: mongodb: fence: the document was written under a later token than %d", backends.ErrNotHeld, token)
		}
	}
	return res, nil
}
