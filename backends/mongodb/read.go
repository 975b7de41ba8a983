package mongodb

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/hustings/hustings/backends/internal/record"
)

// ReadLock reads the lock's root, the server's clock and the reading
// session's document at once, and beside them the states at the version
// this driver last saw of the lock and the one after it; then, for a lock
// another session holds, that session's document. Every one is a read by
// _id: FerretDB reads every document of the collection for any other
// query (it pushes only _id equality down to SQLite), and a storm of
// takes on a large collection outlasts the sessions' TTL. A lock with no
// root has no state (roots are kept; see the package doc). Only when the
// versions seen are gone (another process wrote the lock since, or an
// operator deleted its states) are the lock's documents read by name. A
// read may be a write behind; the write after it then conflicts (every
// write is checked against the chain, see write), and the core reads
// again.
func (d *driver) ReadLock(ctx context.Context, name, self string) (record.View, error) {
	if err := d.enter(ctx); err != nil {
		return record.View{}, unavailable(ctx, "read", err)
	}
	defer d.leave()
	var (
		now                    time.Time
		me                     sessionDoc
		seen, next             lockDoc
		nerr, serr, perr, qerr error
		wg                     sync.WaitGroup
	)
	wg.Go(func() { now, nerr = d.now(ctx) })
	if self != "" {
		wg.Go(func() { me, serr = d.findSession(ctx, self) })
	}
	known := d.seen.get(name)
	if known != 0 {
		wg.Go(func() { seen, perr = d.findLock(ctx, stateKey(name, known)) })
		wg.Go(func() { next, qerr = d.findLock(ctx, stateKey(name, known+1)) })
	}
	root, err := d.findLock(ctx, rootKey(name))
	wg.Wait()
	if err = errors.Join(err, nerr, serr, perr, qerr); err != nil {
		return record.View{}, unavailable(ctx, "read", err)
	}
	v := record.View{Now: now, SelfAlive: me.alive(now)}
	if root.ID == "" {
		d.seen.forget(name)
		return v, nil
	}
	h, ok, err := d.headFrom(ctx, root, seen, next)
	if err != nil {
		return record.View{}, unavailable(ctx, "read", err)
	}
	if !ok {
		d.seen.forget(name)
		return v, nil
	}
	d.seen.put(name, uint64(h.Ver))
	v.Lock = h.lock()
	holder := me
	if h.Sid != "" && h.Sid != self {
		if holder, err = d.findSession(ctx, h.Sid); err != nil {
			return record.View{}, unavailable(ctx, "read", err)
		}
	}
	if h.Sid != "" && holder.alive(now) {
		v.HolderAlive, v.HolderExpires = true, holder.expires()
	}
	return v, nil
}

// headFrom returns the state of the lock whose root is root, from the
// states read at the version last seen and the one after it (zero
// documents if absent): the later one found, and the states after it
// while there are; by name when neither is found or they are of an epoch
// before the root's.
func (d *driver) headFrom(ctx context.Context, root, seen, next lockDoc) (lockDoc, bool, error) {
	h := seen
	for next.ID != "" {
		h = next
		var err error
		if next, err = d.findLock(ctx, stateKey(root.Name, uint64(h.Ver)+1)); err != nil {
			return lockDoc{}, false, err
		}
	}
	if h.ID != "" && h.Ver>>32 >= root.Epoch {
		return h, true, nil
	}
	docs, err := d.findLocks(ctx, bson.D{{Key: "name", Value: root.Name}})
	if err != nil {
		return lockDoc{}, false, err
	}
	h, ok := head(docs)
	return h, ok, nil
}

// findLock reads the lock document of _id id; a zero lockDoc if none.
func (d *driver) findLock(ctx context.Context, id string) (lockDoc, error) {
	return findByID[lockDoc](ctx, d.locks, id)
}

// findByID reads the document of _id id in coll; a zero T if none.
func findByID[T any](ctx context.Context, coll *mongo.Collection, id string) (T, error) {
	var doc T
	err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&doc)
	if errors.Is(err, mongo.ErrNoDocuments) {
		var zero T
		return zero, nil
	}
	return doc, err
}

// versions remembers the version of each lock a driver last read or
// wrote, so that the next read of it is by _id (see ReadLock). It forgets
// them all past maxSeen names.
type versions struct {
	mu sync.Mutex
	m  map[string]uint64
}

// maxSeen bounds the names a driver remembers versions of.
const maxSeen = 1 << 16

func (v *versions) get(name string) uint64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.m[name]
}

func (v *versions) put(name string, ver uint64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.m == nil || len(v.m) >= maxSeen {
		v.m = make(map[string]uint64)
	}
	v.m[name] = ver
}

func (v *versions) forget(name string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.m, name)
}
