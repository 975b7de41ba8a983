package mongodb

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/hustings/hustings/backends/internal/record"
)

// findSession reads session sid's document; a zero sessionDoc if none.
func (d *driver) findSession(ctx context.Context, sid string) (sessionDoc, error) {
	return findByID[sessionDoc](ctx, d.sessions, sid)
}

// CreateSession upserts the session's document, its time the server's:
// one findOneAndUpdate. The version is that time in milliseconds.
func (d *driver) CreateSession(ctx context.Context, s record.Session) (uint64, error) {
	var doc sessionDoc
	err := d.sessions.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: s.ID}},
		bson.D{
			{Key: "$setOnInsert", Value: bson.D{{Key: "cand", Value: s.Candidate}, {Key: "ttl", Value: s.TTL.Microseconds()}}},
			{Key: "$currentDate", Value: bson.D{{Key: "at", Value: true}}},
		},
		options.FindOneAndUpdate().SetUpsert(true).SetReturnDocument(options.After)).Decode(&doc)
	if err != nil {
		return 0, unavailable(ctx, "open", err)
	}
	return uint64(doc.At.UnixMilli()), nil
}

// renewAt sets the session's time to the server's, and prev to at, if
// its document is still at time at and not dead; ok false if not.
func (d *driver) renewAt(ctx context.Context, sid string, at time.Time) (sessionDoc, bool, error) {
	var doc sessionDoc
	err := d.sessions.FindOneAndUpdate(ctx,
		bson.D{{Key: "_id", Value: sid}, {Key: "at", Value: at}, {Key: "dead", Value: bson.D{{Key: "$ne", Value: true}}}},
		bson.D{
			{Key: "$currentDate", Value: bson.D{{Key: "at", Value: true}}},
			{Key: "$set", Value: bson.D{{Key: "prev", Value: at}}},
		},
		options.FindOneAndUpdate().SetReturnDocument(options.After)).Decode(&doc)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return doc, false, nil
	}
	return doc, err == nil, err
}

// renew renews session s: a findOneAndUpdate conditioned on the time its
// last renewal wrote (s.Version), which then returns the server's time
// of this one, and keeps the time before it (prev). A renewal that came
// after the session's expiry left it lapsed (see sessionDoc.lapsed):
// every reader finds it dead, and renew marks it Dead too. A document
// found at another time (a renewal applied whose answer was lost) is
// renewed from that time, once, unless that renewal lapsed.
func (d *driver) renew(ctx context.Context, s record.Session) (sessionDoc, bool, error) {
	at := time.UnixMilli(int64(s.Version)).UTC()
	for range 2 {
		doc, ok, err := d.renewAt(ctx, s.ID, at)
		if err != nil {
			return doc, false, err
		}
		if ok {
			if !doc.lapsed() {
				return doc, true, nil
			}
			_, err := d.sessions.UpdateOne(ctx, bson.D{{Key: "_id", Value: s.ID}}, bson.D{{Key: "$set", Value: bson.D{{Key: "dead", Value: true}}}})
			return doc, false, err
		}
		cur, err := d.findSession(ctx, s.ID)
		if err != nil || cur.ID == "" || cur.Dead || cur.lapsed() || cur.Cand != s.Candidate || cur.At.Equal(at) {
			return doc, false, err
		}
		at = cur.At
	}
	return sessionDoc{}, false, nil
}

// Renew renews the session's document and, beside it (one round trip),
// reads the documents of the locks held, by name through their index.
func (d *driver) Renew(ctx context.Context, s record.Session, held []record.Lock) (record.Renewal, error) {
	var (
		docs []lockDoc
		ferr error
		wg   sync.WaitGroup
	)
	if len(held) > 0 {
		names := make([]string, len(held))
		for i, l := range held {
			names[i] = l.Name
		}
		wg.Go(func() {
			docs, ferr = d.findLocks(ctx, bson.D{{Key: "name", Value: bson.D{{Key: "$in", Value: names}}}})
		})
	}
	doc, alive, err := d.renew(ctx, s)
	wg.Wait()
	if err = errors.Join(err, ferr); err != nil {
		return record.Renewal{}, unavailable(ctx, "keep-alive", err)
	}
	byName := map[string][]lockDoc{}
	for _, l := range docs {
		byName[l.Name] = append(byName[l.Name], l)
	}
	r := record.Renewal{Alive: alive, Version: uint64(doc.At.UnixMilli()), Now: doc.At}
	for _, ds := range byName {
		if h, ok := head(ds); ok && h.Sid == s.ID {
			r.Locks = append(r.Locks, h.lock())
		}
	}
	return r, nil
}

// findLocks reads the lock documents filter matches.
func (d *driver) findLocks(ctx context.Context, filter bson.D) ([]lockDoc, error) {
	cur, err := d.locks.Find(ctx, filter)
	if err != nil {
		return nil, err
	}
	var docs []lockDoc
	err = cur.All(ctx, &docs)
	return docs, err
}

// DeleteSession frees the held locks (a free state after each one's
// version, as DeleteLock), and deletes the session's document and
// registry entries, all at once; then the documents of sessions renewed
// last sweepAfter ago, which nothing renews (for servers with no TTL
// index).
func (d *driver) DeleteSession(ctx context.Context, s record.Session, held []record.Lock) ([]string, error) {
	errs := make([]error, len(held))
	sem := make(chan struct{}, closeWrites)
	var wg sync.WaitGroup
	for i, l := range held {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			_, errs[i] = d.write(ctx, record.Lock{Name: l.Name}, l.Version)
		})
	}
	var merr error
	wg.Go(func() { _, merr = d.members.DeleteMany(ctx, bson.D{{Key: "sid", Value: s.ID}}) })
	_, err := d.sessions.DeleteOne(ctx, bson.D{{Key: "_id", Value: s.ID}})
	wg.Wait()
	err = errors.Join(err, merr)
	var freed []string
	for i, e := range errs {
		switch {
		case e == nil:
			freed = append(freed, held[i].Name)
		case !errors.Is(e, record.ErrConflict):
			err = errors.Join(err, e)
		}
	}
	if err == nil {
		_, err = d.sessions.DeleteMany(ctx, bson.D{{Key: "at", Value: bson.D{{Key: "$lt", Value: time.Now().Add(-sweepAfter)}}}})
	}
	return freed, unavailable(ctx, "close", err)
}
